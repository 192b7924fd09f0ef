#include "hooks/force_backend.hpp"

#include <atomic>

#include "core/backend.hpp"

namespace kvflash::core {

void force_backend(const char* name) {
  forced_backend_name().store(name, std::memory_order_relaxed);
}

}  // namespace kvflash::core
