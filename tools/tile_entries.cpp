#include "tile_entries.hpp"

#include <cstring>
#include <span>
#include <vector>

#include "backends/lists.hpp"

namespace kvflash::tools {
namespace {

// Whether the first available host entry of list is cpu-amx: the one core::select_backend picks
// for a host problem, the CPU entries having no `supports` hook (every one runs every problem its
// operator validates).
template <typename B>
bool on_tiles(std::span<const B> list) {
  for (const B& b : list) {
    if (b.device != DeviceType::kHost || !b.available(nullptr)) continue;
    return std::strcmp(b.name, "cpu-amx") == 0;
  }
  return false;
}

}  // namespace

std::string TileEntries::names() const {
  std::vector<const char*> on;
  if (ifa) on.push_back("IFA");
  if (sfa) on.push_back("SFA");
  if (li) on.push_back("the indexer");
  if (fia) on.push_back("FIA/PFA");
  std::string s;
  for (size_t i = 0; i < on.size(); ++i) {
    if (i > 0) s += i + 1 == on.size() ? " and " : ", ";
    s += on[i];
  }
  return s;
}

TileEntries tile_entries() {
  return {on_tiles(ifa_backends()), on_tiles(sfa_backends()), on_tiles(li_backends()),
          on_tiles(fia_backends())};
}

}  // namespace kvflash::tools
