// Key/value validation (docs/semantics.md §2.2, §2.3, §2.8, §2.11 rules 6-7): the three KV modes
// (batch-contiguous, tensor list, paged cache) and the (pos, head, dim) strides of each.
#include <string>

#include "core/view_check.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_limits.hpp"
#include "ops/ifa/ifa_validate_parts.hpp"

namespace kvflash::ifa {
namespace {

using core::kIfaBlockAlignFloat;
using core::kIfaBlockAlignInt8;
using core::kIfaMaxBlockSize;
using core::kIfaMaxListBatch;
using core::kIfaMaxPagedHidden;

using core::str;

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kBsh:
      return "BSH";
    case Layout::kBsnd:
      return "BSND";
    case Layout::kBnsd:
      return "BNSD";
  }
  return "?";
}

// A non-paged K or V tensor: rank, batch dim, head and head_dim dims; *seq gets its S.
Status check_seq_tensor(const TensorView& t, const std::string& name, const IfaShape& s,
                        int64_t want_batch, int64_t* seq) {
  const int want_rank = s.layout == Layout::kBsh ? 3 : 4;
  if (t.rank != want_rank) {
    return invalid(name + " must be " + std::to_string(want_rank) + "-D for input_layout " +
                   layout_name(s.layout) + ", got " + t.describe());
  }
  if (t.shape[0] != want_batch) {
    return invalid(name + " dim 0 (" + str(t.shape[0]) + ") must be " +
                   (want_batch == 1 ? std::string("1 in tensor-list mode")
                                    : "the query batch (" + str(want_batch) + ")") +
                   ", got " + t.describe());
  }
  const int64_t kvn = s.num_kv_heads, d = s.head_dim;
  switch (s.layout) {
    case Layout::kBsh:
      // kvn * d <= 256 * 512, no overflow.
      if (t.shape[2] != kvn * d) {
        return invalid(name + " hidden size (dim 2 = " + str(t.shape[2]) +
                       ") must equal num_key_value_heads (" + str(kvn) + ") * head_dim (" + str(d) +
                       "), got " + t.describe());
      }
      *seq = t.shape[1];
      break;
    case Layout::kBsnd:
    case Layout::kBnsd: {
      const int n_axis = s.layout == Layout::kBsnd ? 2 : 1;
      if (t.shape[n_axis] != kvn) {
        return invalid(name + " head dim " + std::to_string(n_axis) + " (" + str(t.shape[n_axis]) +
                       ") must equal num_key_value_heads (" + str(kvn) + "), got " + t.describe());
      }
      if (t.shape[3] != d) {
        return invalid(name + " dim 3 (" + str(t.shape[3]) + ") must equal the query head_dim (" +
                       str(d) + "), got " + t.describe());
      }
      *seq = t.shape[s.layout == Layout::kBsnd ? 1 : 2];
      break;
    }
  }
  return Status::kSuccess;
}

// (pos, head, dim) strides of a non-paged tensor; s_batch steps from batch to batch inside it.
Status seq_view(const TensorView& t, const std::string& name, const IfaShape& s, bool list,
                core::KvCacheView::Seq* seq) {
  seq->s_batch = list ? 0 : t.strides[0];
  switch (s.layout) {
    case Layout::kBsh:
      seq->s_pos = t.strides[1];
      seq->s_dim = t.strides[2];
      return core::scaled_stride(kIfaOp, s.head_dim, t.strides[2], name, &seq->s_head);
    case Layout::kBsnd:
      seq->s_pos = t.strides[1];
      seq->s_head = t.strides[2];
      seq->s_dim = t.strides[3];
      break;
    case Layout::kBnsd:
      seq->s_head = t.strides[1];
      seq->s_pos = t.strides[2];
      seq->s_dim = t.strides[3];
      break;
  }
  return Status::kSuccess;
}

Status validate_non_paged(const IfaArgs& a, IfaShape* s, core::IfaProblem* p) {
  const int64_t count = static_cast<int64_t>(a.key.size());
  if (count == 1) {
    s->kv_mode = KvMode::kContiguous;
  } else if (count == s->batch) {
    s->kv_mode = KvMode::kList;
    if (s->batch > kIfaMaxListBatch) {
      return invalid("key tensor-list mode supports batch <= " + str(kIfaMaxListBatch) + ", got " +
                     str(s->batch) + " tensors");
    }
  } else {
    return invalid("key list length (" + str(count) + ") must be 1 (batch-contiguous) or the " +
                   "query batch (" + str(s->batch) + ", one tensor per batch)");
  }
  const bool list = s->kv_mode == KvMode::kList;
  // Every element is checked against the query-derived dims, so list elements can differ in S
  // only (rule 7).
  s->seq_s.assign(s->batch, 0);
  for (int64_t i = 0; i < count; ++i) {
    const std::string suffix = "[" + str(i) + "]";
    int64_t seq = 0;
    KVFLASH_RETURN_IF_ERROR(
        check_seq_tensor(a.key[i], "key" + suffix, *s, list ? 1 : s->batch, &seq));
    if (list) {
      s->seq_s[i] = seq;
    } else {
      s->seq_s.assign(s->batch, seq);
    }
  }
  p->k.list = p->v.list = list;
  p->k_seqs.resize(s->batch);
  p->v_seqs.resize(s->batch);
  for (int64_t b = 0; b < s->batch; ++b) {
    const size_t i = list ? static_cast<size_t>(b) : 0;
    KVFLASH_RETURN_IF_ERROR(seq_view(a.key[i], "key", *s, list, &p->k_seqs[b]));
    KVFLASH_RETURN_IF_ERROR(seq_view(a.value[i], "value", *s, list, &p->v_seqs[b]));
  }
  return Status::kSuccess;
}

// Paged cache strides: 3-D (blocknum, block_size, KV_N*D) or 4-D (blocknum, KV_N, block_size, D).
Status paged_view(const TensorView& t, const std::string& name, const IfaShape& s,
                  core::KvCacheView* kv) {
  kv->paged = true;
  kv->s_block = t.strides[0];
  if (t.rank == 3) {
    kv->s_pos = t.strides[1];
    kv->s_dim = t.strides[2];
    return core::scaled_stride(kIfaOp, s.head_dim, t.strides[2], name, &kv->s_head);
  }
  kv->s_head = t.strides[1];
  kv->s_pos = t.strides[2];
  kv->s_dim = t.strides[3];
  return Status::kSuccess;
}

Status validate_paged(const IfaArgs& a, IfaShape* s, core::IfaProblem* p) {
  s->kv_mode = KvMode::kPaged;
  if (a.key.size() != 1) {
    return invalid("key must be a single cache tensor when block_table is given (paged KV), got " +
                   str(static_cast<int64_t>(a.key.size())) + " tensors");
  }
  const int64_t bs = a.block_size;
  if (bs <= 0 || bs > kIfaMaxBlockSize) {
    return invalid("block_size (" + str(bs) + ") must be in [1, " + str(kIfaMaxBlockSize) +
                   "] with block_table (paged KV)");
  }
  const bool int8_kv = s->kv_dtype == DType::kInt8;
  const int64_t align = int8_kv ? kIfaBlockAlignInt8 : kIfaBlockAlignFloat;
  if (bs % align != 0) {
    return invalid("block_size (" + str(bs) + ") must be a multiple of " + str(align) + " for " +
                   dtype_name(s->kv_dtype) + " key/value");
  }
  const TensorView& k = a.key[0];
  const int64_t kvn = s->num_kv_heads, d = s->head_dim;
  if (k.rank == 3) {
    if (k.shape[1] != bs) {
      return invalid("key cache dim 1 (" + str(k.shape[1]) + ") must equal block_size (" + str(bs) +
                     "), got " + k.describe());
    }
    if (k.shape[2] != kvn * d) {
      return invalid("key cache dim 2 (" + str(k.shape[2]) + ") must equal num_key_value_heads (" +
                     str(kvn) + ") * head_dim (" + str(d) + "), got " + k.describe());
    }
    if (kvn * d > kIfaMaxPagedHidden) {
      return invalid("key cache hidden size num_key_value_heads * head_dim (" + str(kvn * d) +
                     ") must be <= " + str(kIfaMaxPagedHidden) + " for a 3-D paged cache");
    }
  } else if (k.rank == 4) {
    if (s->layout != Layout::kBnsd) {
      return invalid(std::string("key cache must be 3-D (blocknum, block_size, KV_N*D) for "
                                 "input_layout ") +
                     layout_name(s->layout) + "; a 4-D cache needs BNSD, got " + k.describe());
    }
    if (k.shape[1] != kvn) {
      return invalid("key cache dim 1 (" + str(k.shape[1]) + ") must equal num_key_value_heads (" +
                     str(kvn) + "), got " + k.describe());
    }
    if (k.shape[2] != bs) {
      return invalid("key cache dim 2 (" + str(k.shape[2]) + ") must equal block_size (" + str(bs) +
                     "), got " + k.describe());
    }
    if (k.shape[3] != d) {
      return invalid("key cache dim 3 (" + str(k.shape[3]) + ") must equal the query head_dim (" +
                     str(d) + "), got " + k.describe());
    }
  } else {
    return invalid(
        "key cache must be 3-D (blocknum, block_size, KV_N*D) or, with BNSD, 4-D "
        "(blocknum, KV_N, block_size, D), got " +
        k.describe());
  }
  const TensorView& bt = *a.block_table;
  if (bt.dtype != DType::kInt32) {
    return invalid(std::string("block_table dtype must be int32, got ") + dtype_name(bt.dtype));
  }
  if (bt.rank != 2)
    return invalid("block_table must be 2-D (batch, max_blocks_per_seq), got " + bt.describe());
  if (bt.shape[0] != s->batch) {
    return invalid("block_table dim 0 (" + str(bt.shape[0]) + ") must equal the query batch (" +
                   str(s->batch) + ")");
  }
  if (bt.shape[1] == 0) return invalid("block_table must not be empty, got " + bt.describe());

  KVFLASH_RETURN_IF_ERROR(paged_view(k, "key", *s, &p->k));
  KVFLASH_RETURN_IF_ERROR(paged_view(a.value[0], "value", *s, &p->v));
  p->block_table.s0 = bt.strides[0];
  p->block_table.s1 = bt.strides[1];
  p->block_table.blocks_per_seq = bt.shape[1];
  p->block_table.block_size = bs;
  p->block_table.num_blocks = k.shape[0];
  return Status::kSuccess;
}

}  // namespace

Status validate_kv(const IfaArgs& a, IfaShape* s, core::IfaProblem* p) {
  if (a.value.size() != a.key.size()) {
    return invalid("value list length (" + str(static_cast<int64_t>(a.value.size())) +
                   ") must equal key list length (" + str(static_cast<int64_t>(a.key.size())) +
                   ")");
  }
  for (size_t i = 0; i < a.key.size(); ++i) {
    if (!core::same_dims(a.value[i], a.key[i])) {
      return invalid("value[" + std::to_string(i) + "] shape " + core::dims_str(a.value[i]) +
                     " must equal key[" + std::to_string(i) + "] shape " +
                     core::dims_str(a.key[i]));
    }
  }
  p->k.dtype = s->kv_dtype;
  p->v.dtype = s->kv_dtype;
  if (a.block_table.has_value()) return validate_paged(a, s, p);
  return validate_non_paged(a, s, p);
}

}  // namespace kvflash::ifa
