// Measured memory read bandwidth: the ceiling a memory-bound decode kernel is compared against.
#pragma once

namespace kvflash::tools {

/// Streams a buffer much larger than the caches with num_threads readers (0 = library default) and
/// returns the median read bandwidth in GB/s (1e9 bytes/s) over a few passes.
double measure_read_bandwidth_gbs(int num_threads, double buffer_gib = 1.0);

}  // namespace kvflash::tools
