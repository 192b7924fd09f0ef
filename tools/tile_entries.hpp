// Which operators' host plans run on the matrix engine on this machine: the CPU entry the dispatch
// picks (src/backends/lists.cpp) is cpu-amx. Their compute-bound rows are judged against the AMX
// peak (roofline.hpp, compute_ceiling), the other rows against the vector peaks.
#pragma once

#include <string>

namespace kvflash::tools {

struct TileEntries {
  bool ifa = false, sfa = false, li = false, fia = false;  ///< FIA's entry serves PFA too
  bool all() const { return ifa && sfa && li && fia; }
  /// "IFA, SFA, the indexer and FIA/PFA" (those on the tiles), or "" when none is.
  std::string names() const;
};

/// The entries the dispatch picks now (KVFLASH_MAX_ISA caps it like the kernels).
TileEntries tile_entries();

}  // namespace kvflash::tools
