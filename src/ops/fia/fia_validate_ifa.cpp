// D4: FIA's Q_S = 1 decode branch is IFA's semantics and runs IFA's kernels. The call becomes
// IncreFlashAttention's arguments (zero_fully_masked_rows: D2's row-invalid correction) and IFA's
// own validator plans it, when IFA expresses it: same output layout as the query's, no LSE (an
// empty row's is +inf here, -inf in IFA), no shared prefix, sink, split or per-token antiquant.
// Anything else, or anything IFA's validator refuses, runs on the FIA kernel's split-KV path.
#include <string>

#include "core/error.hpp"
#include "kvflash/ifa.hpp"
#include "ops/fia/fia_validate_parts.hpp"
#include "ops/ifa/ifa_validate.hpp"

namespace kvflash::fia {

Status plan_decode_on_ifa(const FiaArgs& a, const FiaShape& s, core::FiaProblem* p) {
  p->use_ifa = false;
  const bool expressible = s.decode && s.in == s.out && !a.softmax_lse_flag &&
                           !a.key_shared_prefix && !a.learnable_sink && !a.key_antiquant_scale &&
                           !a.value_antiquant_scale && a.antiquant_mode == 0;
  if (!expressible) return Status::kSuccess;
  IfaArgs i;
  i.query = a.query;
  i.key = a.key;
  i.value = a.value;
  i.pse_shift = a.pse_shift;
  if (p->params.has_mask) i.atten_mask = a.atten_mask;  // modes 2-4's mask is never read
  i.actual_seq_lengths = a.actual_seq_lengths_kv;       // IFA's lengths are the KV lengths
  i.quant_scale2 = a.quant_scale2;
  i.quant_offset2 = a.quant_offset2;
  i.antiquant_scale = a.antiquant_scale;
  i.antiquant_offset = a.antiquant_offset;
  i.block_table = a.block_table;
  if (p->kv_padding) i.kv_padding_size = a.kv_padding_size;
  i.num_heads = a.num_heads;
  i.scale_value = a.scale;
  i.input_layout = s.in;
  i.num_key_value_heads = a.num_key_value_heads;
  i.block_size = a.block_size;
  i.inner_precise = a.inner_precise;
  i.attention_out = a.attention_out;
  i.zero_fully_masked_rows = true;
  core::IfaProblem ifa;
  const Status st = ifa::validate_ifa(i, &ifa);
  if (st == Status::kRuntime) return st;  // out of memory: the plan fails
  if (st != Status::kSuccess) {
    core::clear_error();  // a refusal is not an error: the FIA kernel runs the call
    return Status::kSuccess;
  }
  p->ifa = std::move(ifa);
  p->use_ifa = true;
  return Status::kSuccess;
}

}  // namespace kvflash::fia
