// Binding one run's tensors to a plan: the check that they describe the plan's problem, and the
// pointers every backend reads them through. Host arithmetic on pointers only: nothing here reads
// a tensor, so it serves device memory as well.
#pragma once

#include <cstdint>
#include <vector>

#include "kvflash/ifa.hpp"
#include "kvflash/status.hpp"
#include "ops/ifa/ifa_problem.hpp"

namespace kvflash::ifa {

/// args with every data pointer cleared, and kv_padding_size dropped when the plan does not use it
/// (create ignores it then, so runs do too): what a plan keeps of its creation arguments.
IfaArgs strip_data(const IfaArgs& args, const core::IfaProblem& problem);

/// kInvalid unless args has plan's metadata (every tensor's dtype, device, dims, strides and
/// offset, which optional tensors are present, the attributes and actual_seq_lengths; not
/// num_threads); kNullPtr if a tensor holding elements has no data. The message names the
/// argument.
Status check_matches_plan(const IfaArgs& plan, const IfaArgs& args);

/// The tensors of one decode run, in whichever operator's arguments hold them (IFA's, or FIA's
/// decode requests: ops/fia/fia_validate_decode.cpp): what bind_decode points a problem's views
/// at. Null: absent. A parameter's `at` (elements of its dtype) moves it to its first element
/// (FIA's combined antiquant parameters hold the key's and the value's in one tensor).
struct DecodeTensors {
  struct Param {
    const TensorView* t = nullptr;
    int64_t at = 0;
  };
  const TensorView* query = nullptr;
  const TensorView* out = nullptr;
  const TensorView* lse = nullptr;
  const std::vector<TensorView>* key = nullptr;
  const std::vector<TensorView>* value = nullptr;
  const TensorView* block_table = nullptr;
  const TensorView* mask = nullptr;
  const TensorView* pse = nullptr;
  Param antiquant_scale, antiquant_offset, antiquant_scale_v, antiquant_offset_v;
  const TensorView* quant_scale2 = nullptr;
  const TensorView* quant_offset2 = nullptr;
  const TensorView* sink = nullptr;
  const TensorView* kv_padding_size = nullptr;
};

/// The decode description's one binder: fills the pointers of d from t, element 0 (plus `at`) of
/// the tensor of every view p uses; the derived fields stay null.
void bind_decode(const core::IfaProblem& p, const DecodeTensors& t, core::IfaData* d);

/// bind_decode over IFA's arguments (matched).
void bind_data(const core::IfaProblem& p, const IfaArgs& args, core::IfaData* d);

/// Where batch b's rows of a non-paged K (kv = p.k, seq = p.k_seqs[b], base0 = d.k_cache, list =
/// d.k_list) or V start: element 0 of list tensor b, or of the one tensor advanced b * s_batch
/// elements. Null for an empty tensor, whose rows nothing reads. Pointer arithmetic only.
const void* kv_batch_base(const core::KvCacheView& kv, const core::KvCacheView::Seq& seq,
                          const void* base0, const TensorView* list, int64_t b);

/// Non-paged p: writes every batch's K and V bases to k_seq / v_seq (p.batch entries each) and
/// points d's k_seq / v_seq at them.
void bind_batch_bases(const core::IfaProblem& p, const void** k_seq, const void** v_seq,
                      core::IfaData* d);

/// "B=2 N=32 KV_N=8 D=128 fp16/fp16 paged": p's shape for KVFLASH_VERBOSE=dispatch, into buf
/// (size bytes, truncated; no allocation).
void describe(const core::IfaProblem& p, char* buf, size_t size);

}  // namespace kvflash::ifa
