// ScatterPaKvCache (writing new key / value rows into a paged KV cache by slot) — the C++ API.
//
// Semantics are those of aclnnScatterPaKvCache's ND cache (cacheMode "Norm", scatterMode
// "None"), the cache write of vllm-ascend's attention backend (torch_npu.npu_scatter_pa_kv_cache
// with cache_mode="Norm", torch_npu._npu_reshape_and_cache): token t's rows key[t] (KV_N, Dk) and
// value[t] (KV_N, Dv) are copied, bit for bit, to row slot % block_size of block
// slot / block_size of key_cache (num_blocks, block_size, KV_N, Dk) and value_cache
// (num_blocks, block_size, KV_N, Dv), where slot = slot_mapping[t] (docs/api.md "KV cache
// writes"):
//
// - a negative slot skips its token (vLLM's padding slot -1; op-plugin's own test golden skips
//   slot < 0 too);
// - a slot >= num_blocks * block_size, or a slot given to two tokens (upstream: "correctness not
//   guaranteed"), is refused with kInvalid naming the entries, before anything is written: the
//   caches are unchanged;
// - any dtype (the copy is bitwise), any strides of every tensor; key and value may differ in
//   head dim. The value pair may be absent (aclnn's 0-D value: the key only);
// - the caches may share one buffer where no element is both (vLLM's (2, blocks, ...),
//   FlashInfer's (blocks, 2, ...), a (.., Dk + Dv) split); a cache whose strides give two of its
//   elements one address is refused by create, and a key and a value cache with an element in
//   common by run (kInvalid, nothing written).
//
// What is out of scope is refused by name: the FRACTAL_NZ cache (cache_mode "PA_NZ", a 5-D
// cache), the compressed scenarios (compress_lens, compress_seq_offsets, seq_lens, a 4-D key) and
// the scatter modes other than "None".
//
//   kvflash::ScatterPaKvCacheArgs args;   // key, key_cache, slot_mapping, value, value_cache
//   std::unique_ptr<kvflash::ScatterPaKvCachePlan> plan;
//   kvflash::ScatterPaKvCachePlan::create(args, &plan);
//   std::vector<std::byte> ws(plan->workspace_size());
//   plan->run(args, ws.data(), ws.size());
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash {

/// The arguments of one cache write, in aclnnScatterPaKvCacheGetWorkspaceSize's order. Views
/// are borrowed for the duration of a call; every view may have any strides.
struct ScatterPaKvCacheArgs {
  TensorView key;           ///< (T, KV_N, Dk), any dtype
  TensorView key_cache;     ///< (num_blocks, block_size, KV_N, Dk), key's dtype: written in place
  TensorView slot_mapping;  ///< (T,) int32 or int64: device data, read by run()
  std::optional<TensorView> value;        ///< (T, KV_N, Dv), key's dtype; absent: the key only
  std::optional<TensorView> value_cache;  ///< (num_blocks, block_size, KV_N, Dv); with value
  /// The compressed scenarios' lengths: must be absent.
  std::optional<TensorView> compress_lens, compress_seq_offsets, seq_lens;
  std::string cache_mode = "Norm";    ///< "Norm" (or empty); "PA_NZ" is refused
  std::string scatter_mode = "None";  ///< "None" (or empty); the others are refused
  /// scatterMode "Nct"'s key / value strides and offsets: ignored (aclnn callers pass them with
  /// every mode; op-plugin passes {1, 1} and {0, 0}).
  std::optional<std::vector<int64_t>> strides, offsets;
  /// Worker threads for this call; 0 = the library default. Results do not depend on it.
  int num_threads = 0;
};

namespace core {
template <class Plan>
struct PlanAccess;  // library-internal (src/core/plan_access.hpp)
}  // namespace core

/// A validated, planned cache write (the plan/run pattern of IfaPlan).
class KVFLASH_API ScatterPaKvCachePlan {
 public:
  /// Validates args' metadata (the only place that rejects a cache write) and builds a plan; reads
  /// no tensor. On failure *plan is reset and the status and last_error_message() say why.
  static Status create(const ScatterPaKvCacheArgs& args,
                       std::unique_ptr<ScatterPaKvCachePlan>* plan);
  ~ScatterPaKvCachePlan();
  ScatterPaKvCachePlan(const ScatterPaKvCachePlan&) = delete;
  ScatterPaKvCachePlan& operator=(const ScatterPaKvCachePlan&) = delete;

  /// Bytes of workspace run() needs (16 per slot of a table of at least 2 T slots, for the
  /// duplicate check): a function of the plan only.
  size_t workspace_size() const;

  /// Writes the rows of args, which must have the plan's metadata (data pointers and num_threads
  /// may differ). Never allocates. Host tensors run synchronously (stream must be null). Reads
  /// slot_mapping first: a slot outside the cache or given twice is kInvalid naming the entries,
  /// and nothing is written.
  Status run(const ScatterPaKvCacheArgs& args, void* workspace, size_t workspace_size,
             void* stream = nullptr) const;

  /// The status of the device data a run read: host plans return every fault from run(), so this
  /// reads nothing and returns kSuccess (the member the other plans have, kept alike).
  Status status(const void* workspace, void* stream = nullptr) const;

  /// The plan-relevant metadata of args as bytes (see IfaPlan::fingerprint).
  static Status fingerprint(const ScatterPaKvCacheArgs& args, std::string* bytes);

 private:
  struct Impl;
  template <class>
  friend struct core::PlanAccess;  // library-internal (src/core/plan_access.hpp)
  explicit ScatterPaKvCachePlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One-shot convenience: validate, allocate a workspace, run.
KVFLASH_API Status scatter_pa_kv_cache(const ScatterPaKvCacheArgs& args);

}  // namespace kvflash
