// Decoding a fuzz input into one ScatterPaKvCache call, and the checks of its result (shared by
// fuzz_kv_cache_api.cpp and fuzz_kv_cache_aclnn.cpp): a small valid case of the shared builder
// (tests/support/kv_cache_cases.hpp: dims, dtype, slot dtype, the key only, strided rows, a fused
// cache), then mutations of the modes, of the refused tensors, of any tensor's metadata and of
// slot_mapping's values (-1, past the cache, INT32_MAX, a duplicate of another entry).
#pragma once

#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "kvflash/kv_cache.hpp"
#include "mutate.hpp"
#include "support/kv_cache_cases.hpp"

namespace kvflash::fuzz {

struct KvCacheFuzzCase {
  testing::KvCacheCaseData data;
  ScatterPaKvCacheArgs args;
  CaseMemory mem;
  testing::TestRng rng{1};
  std::vector<Slot> slots();
};

const std::vector<const char*>& kv_cache_names();

/// Decodes a case; `extensions`: C++-only fields (num_threads).
void decode_kv_cache(FuzzInput& in, bool extensions, KvCacheFuzzCase* f);

/// Whether a planned call is backed and small enough to run.
bool kv_cache_affordable(const KvCacheFuzzCase& f);

/// Before a run: the oracle of f's arguments as they are now.
void expect_kv_cache(KvCacheFuzzCase& f);

/// After a run that returned `status` with `message`: 161002 exactly when the oracle refuses the
/// slots (the message naming slot_mapping, nothing written), else 0 and the caches the oracle's
/// bytes.
void check_kv_cache_run(KvCacheFuzzCase& f, int64_t status, const std::string& message,
                        const std::string& where);

}  // namespace kvflash::fuzz
