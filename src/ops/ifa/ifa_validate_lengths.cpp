// Per-batch KV lengths (docs/semantics.md §2.4, §2.7, §2.8): actualSeqLengths (a host array), paged
// capacity and whether KV left padding applies. The padding value itself lives in device memory and
// is read by the run (core::ifa_kv_range).
#include <algorithm>
#include <string>

#include "core/checked_math.hpp"
#include "core/view_check.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_validate_parts.hpp"

namespace kvflash::ifa {
namespace {

using core::str;

// len_b for every batch from actual_seq_lengths (absent/empty: the key S of the batch).
Status resolve_lengths(const IfaArgs& a, const IfaShape& s, std::vector<int64_t>* lens) {
  const auto& asl = a.actual_seq_lengths;
  const bool given = asl.has_value() && !asl->empty();
  const bool paged = s.kv_mode == KvMode::kPaged;
  if (paged && !given) {
    return invalid("actual_seq_lengths is required (non-empty) with block_table (paged KV)");
  }
  const int64_t count = given ? static_cast<int64_t>(asl->size()) : 0;
  if (given && count != 1 && count < s.batch) {
    return invalid("actual_seq_lengths has " + str(count) + " entries; expected 1 (broadcast) " +
                   "or at least the batch (" + str(s.batch) + ")");
  }
  lens->assign(s.batch, 0);
  for (int64_t b = 0; b < s.batch; ++b) {
    if (!given) {
      (*lens)[b] = s.seq_s[b];
      continue;
    }
    const int64_t idx = count == 1 ? 0 : b;
    const int64_t len = (*asl)[idx];
    if (len < 0) {
      return invalid("actual_seq_lengths[" + str(idx) + "] (" + str(len) + ") must be >= 0");
    }
    if (!paged && len > s.seq_s[b]) {
      return invalid("actual_seq_lengths[" + str(idx) + "] (" + str(len) +
                     ") must be <= the key sequence length of batch " + str(b) + " (" +
                     str(s.seq_s[b]) + ")");
    }
    (*lens)[b] = len;
  }
  return Status::kSuccess;
}

// Paged: every length fits the block-table row, and the cache holds all referenced blocks.
Status check_paged_capacity(const IfaArgs& a, const std::vector<int64_t>& lens, IfaShape* s,
                            core::IfaProblem* p) {
  const core::BlockTableView& bt = p->block_table;
  const auto capacity = core::checked_mul(bt.blocks_per_seq, bt.block_size);
  if (!capacity) {
    return invalid("block_table dim 1 (" + str(bt.blocks_per_seq) + ") * block_size (" +
                   str(bt.block_size) + ") overflows int64");
  }
  int64_t total = 0;
  for (int64_t b = 0; b < s->batch; ++b) {
    const int64_t need = lens[b] / bt.block_size + (lens[b] % bt.block_size != 0 ? 1 : 0);
    if (need > bt.blocks_per_seq) {
      const int64_t idx = a.actual_seq_lengths->size() == 1 ? 0 : b;
      return invalid("block_table dim 1 (" + str(bt.blocks_per_seq) +
                     ") is too small: " + "actual_seq_lengths[" + str(idx) + "] (" + str(lens[b]) +
                     ") needs " + str(need) + " blocks of block_size " + str(bt.block_size));
    }
    const auto sum = core::checked_add(total, need);
    if (!sum) return invalid("actual_seq_lengths need more than int64 blocks in total");
    total = *sum;
  }
  if (total > bt.num_blocks && !a.blocks_may_repeat) {
    return invalid("key cache has " + str(bt.num_blocks) + " blocks (dim 0) but " +
                   "actual_seq_lengths need " + str(total) +
                   " (the sum of ceil(len_b / block_size))");
  }
  s->pse_cols = *capacity;
  s->mask_cols = *capacity;
  return Status::kSuccess;
}

// V4 KV left padding: active only with actual_seq_lengths and a batch-contiguous KV; otherwise
// kv_padding_size is ignored (docs/semantics.md §2.7, decision #12).
Status resolve_left_padding(const IfaArgs& a, const IfaShape& s, bool* active) {
  *active = false;
  const bool given = a.actual_seq_lengths.has_value() && !a.actual_seq_lengths->empty();
  if (!a.kv_padding_size.has_value() || !given || s.kv_mode != KvMode::kContiguous) {
    return Status::kSuccess;
  }
  const TensorView& t = *a.kv_padding_size;
  int64_t numel = 0;
  KVFLASH_RETURN_IF_ERROR(core::check_view(kIfaOp, t, "kv_padding_size", &numel));
  if (numel == 0) return Status::kSuccess;
  if (t.dtype != DType::kInt64) {
    return invalid(std::string("kv_padding_size dtype must be int64, got ") + dtype_name(t.dtype));
  }
  // Element 0 is the padding of every batch; the run reads it, in stream order.
  *active = true;
  return Status::kSuccess;
}

}  // namespace

Status validate_lengths(const IfaArgs& a, IfaShape* s, core::IfaProblem* p) {
  std::vector<int64_t> lens;
  KVFLASH_RETURN_IF_ERROR(resolve_lengths(a, *s, &lens));
  p->kv_len = lens;
  if (s->kv_mode == KvMode::kPaged) {
    KVFLASH_RETURN_IF_ERROR(check_paged_capacity(a, lens, s, p));
  } else {
    KVFLASH_RETURN_IF_ERROR(resolve_left_padding(a, *s, &p->left_padding));
    p->kv_seq_len = s->seq_s[0];  // used with left padding, i.e. batch-contiguous: one S
    s->pse_cols = *std::max_element(s->seq_s.begin(), s->seq_s.end());
    // Without padding the attended ranges are [0, len_b). With it they shift right by a value
    // only the run knows; the run checks them against the mask's last dim (a batch whose range
    // would pass it faults instead of reading beyond the mask).
    s->mask_cols = *std::max_element(lens.begin(), lens.end());
  }
  // Decision: views with zero strides can describe sequences far longer than memory. Bounding
  // the total work (sum of kv_len * N * D) keeps every size the kernel derives from it (workspace,
  // chunk counts) far from overflow.
  std::optional<int64_t> work = 0;
  for (int64_t b = 0; b < s->batch && work; ++b) {
    const auto row = core::checked_mul(p->kv_len[b], s->num_heads * s->head_dim);
    work = row ? core::checked_add(*work, *row) : std::nullopt;
  }
  if (!work) {
    return invalid(
        "actual_seq_lengths / key sequence lengths are too large: the sum of kv_len * "
        "num_heads * head_dim overflows int64");
  }
  return Status::kSuccess;
}

}  // namespace kvflash::ifa
