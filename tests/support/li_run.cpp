#include "support/li_run.hpp"

#include "cpu/li/li_kernel_isa.hpp"

namespace kvflash::testing {

void li_bind(const reference::LiCall& c, cpu::LiParams* pp, cpu::LiData* dd) {
  cpu::LiParams& p = *pp;
  cpu::LiData& d = *dd;
  p = cpu::LiParams{};
  d = cpu::LiData{};
  const bool q_tnd = c.layout_query == "TND";
  const TensorView& q = c.query;
  const TensorView& w = c.weights;
  const TensorView& k = c.key;
  p.q_tnd = q_tnd;
  p.batch = q_tnd ? c.actual_seq_lengths_query->shape[0] : q.shape[0];
  p.num_heads = q.shape[q_tnd ? 1 : 2];
  p.sparse_count = c.sparse_count;
  p.sparse_mode = c.sparse_mode;
  p.s1 = q_tnd ? 0 : q.shape[1];
  p.num_rows = q_tnd ? q.shape[0] : q.shape[0] * q.shape[1];
  p.dtype = q.dtype;
  p.w_dtype = w.dtype;
  if (q_tnd) {
    p.q_ss = q.strides[0], p.q_sh = q.strides[1], p.q_sd = q.strides[2];
    p.w_ss = w.strides[0], p.w_sh = w.strides[1];
  } else {
    p.q_sb = q.strides[0], p.q_ss = q.strides[1], p.q_sh = q.strides[2], p.q_sd = q.strides[3];
    p.w_sb = w.strides[0], p.w_ss = w.strides[1], p.w_sh = w.strides[2];
  }
  if (c.layout_key == "PA_BSND") {
    const TensorView& bt = *c.block_table;
    p.key_layout = cpu::LiKeyLayout::kPaged;
    p.k_s0 = k.strides[0], p.k_s1 = k.strides[1], p.k_sd = k.strides[3];
    p.block_size = k.shape[1];
    p.num_blocks = k.shape[0];
    p.bt_s0 = bt.strides[0], p.bt_s1 = bt.strides[1];
    p.kv_cap = bt.shape[1] * k.shape[1];
    d.block_table = static_cast<const int32_t*>(bt.base());
  } else if (c.layout_key == "TND") {
    p.key_layout = cpu::LiKeyLayout::kTnd;
    p.k_s1 = k.strides[0], p.k_sd = k.strides[2];
    p.kv_cap = k.shape[0];
  } else {
    p.key_layout = cpu::LiKeyLayout::kBsnd;
    p.k_s0 = k.strides[0], p.k_s1 = k.strides[1], p.k_sd = k.strides[3];
    p.kv_cap = k.shape[1];
  }
  if (c.actual_seq_lengths_query && c.actual_seq_lengths_query->data) {
    p.has_asq = true;
    p.asq_64 = c.actual_seq_lengths_query->dtype == DType::kInt64;
    p.asq_s = c.actual_seq_lengths_query->strides[0];
    d.asq = c.actual_seq_lengths_query->base();
  }
  if (c.actual_seq_lengths_key && c.actual_seq_lengths_key->data) {
    p.has_ask = true;
    p.ask_64 = c.actual_seq_lengths_key->dtype == DType::kInt64;
    p.ask_s = c.actual_seq_lengths_key->strides[0];
    d.ask = c.actual_seq_lengths_key->base();
  }
  p.return_value = c.return_value && c.sparse_values;
  d.query = q.base();
  d.key = k.base();
  d.weights = w.base();
  d.indices = static_cast<int32_t*>(c.sparse_indices.base());
  d.values = p.return_value ? c.sparse_values->base() : nullptr;
}

const cpu::LiKernels& li_kernels(cpu::Isa isa) {
  switch (isa) {
    case cpu::Isa::kAmx:
      return cpu::amx::kLiKernels;
    case cpu::Isa::kAvx512Bf16:
      return cpu::avx512::kLiKernelsBf16;
    case cpu::Isa::kAvx512:
      return cpu::avx512::kLiKernels;
    case cpu::Isa::kAvx2:
      return cpu::avx2::kLiKernels;
    case cpu::Isa::kScalar:
      break;
  }
  return cpu::scalar::kLiKernels;
}

namespace {
Status run_kernels(const cpu::LiParams& p, const cpu::LiData& d, const cpu::LiKernels& k,
                   int num_threads, void* ws) {
  core::RunContext ctx;
  ctx.num_threads = num_threads;
  ctx.workspace = ws;
  ctx.workspace_size = cpu::li_workspace_size(p);
  return cpu::li_run(p, d, ctx, k);
}
}  // namespace

Status li_run_isa(const cpu::LiParams& p, const cpu::LiData& d, cpu::Isa isa, int num_threads,
                  void* ws) {
  return run_kernels(p, d, li_kernels(isa), num_threads, ws);
}

Status li_run_call(const reference::LiCall& call, const cpu::LiKernels& k, int num_threads,
                   std::vector<std::byte>* ws) {
  cpu::LiParams p;
  cpu::LiData d;
  li_bind(call, &p, &d);
  const size_t need = cpu::li_workspace_size(p);
  if (ws->size() < need) ws->resize(need);
  return run_kernels(p, d, k, num_threads, ws->data());
}

Status li_run_call(const reference::LiCall& call, cpu::Isa isa, int num_threads,
                   std::vector<std::byte>* ws) {
  return li_run_call(call, li_kernels(isa), num_threads, ws);
}

}  // namespace kvflash::testing
