// Forcing one entry of the backend lists (core/backend.hpp): tests/backend_ops_test.cpp runs every
// available host entry of every operator this way. A test hook, not part of libkvflash, which
// only reads the forced name (core::forced_backend).
#pragma once

namespace kvflash::core {

/// When name is not null, a plan runs only the entry of that name (if it is in the list of the
/// plan's device and available; otherwise none); null restores the normal choice. Process-wide:
/// set it between runs. name must outlive its use (an entry's own name, a literal).
void force_backend(const char* name);

}  // namespace kvflash::core
