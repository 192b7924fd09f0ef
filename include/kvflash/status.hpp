// C++ view of the status codes in status.h.
#pragma once

#include <cstdint>

#include "kvflash/export.h"
#include "kvflash/status.h"

namespace kvflash {

enum class Status : int32_t {
  kSuccess = KVFLASH_SUCCESS,
  kNullPtr = KVFLASH_ERR_PARAM_NULLPTR,
  kInvalid = KVFLASH_ERR_PARAM_INVALID,
  kRuntime = KVFLASH_ERR_RUNTIME,
};

/// The message of the most recent failure on this thread ("" if none).
KVFLASH_API const char* last_error_message();

/// Default worker count for calls that pass num_threads = 0. 0 restores the default: the parallel
/// backend's max_threads (kvflash/parallel.hpp) when one is installed, else the hardware count.
KVFLASH_API void set_num_threads(int n);
KVFLASH_API int get_num_threads();

}  // namespace kvflash
