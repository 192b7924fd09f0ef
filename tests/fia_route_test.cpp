// Which kernels a FIA decode call plans onto (D4: IFA's, src/ops/fia/fia_validate_decode.cpp). The
// split-KV path of the FIA kernel computes the same result 2-3x slower (docs/perf-log.md), so only a
// test of the route catches a regression to it: every case of the shared list that is a decode
// call IFA's kernels express must plan onto them (in a mixed TND call: its leading one-row
// requests), and the ones they cannot express (a shared prefix, MLA rope, ...) must not. The
// predicate below is written from the documented rules (docs/conventions.md, "FIA's decode
// branch"), not from the validator's code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/view_check.hpp"
#include "fia_reference.hpp"
#include "kvflash/fia.hpp"
#include "ops/fia/fia_bind.hpp"
#include "ops/fia/fia_plan_impl.hpp"
#include "support/elements.hpp"
#include "support/fia_cases.hpp"

namespace kvflash::testing {
namespace {

// Whether c is a decode call that runs on IFA's kernels by the documented rules.
bool expect_on_ifa(const FiaCase& c) {
  if (c.prompt || c.rope_dim > 0 || c.prefix_len > 0 || c.dv() != c.head_dim) return false;
  // IFA's own rule: a paged cache's block size a multiple of 16 (32 for int8).
  if (c.paged && c.block_size % (c.kv_dtype == DType::kInt8 ? 32 : 16) != 0) return false;
  if (!c.tnd()) {
    // D4's decode branch: S1 = 1 (no slack, no query left padding).
    return c.max_q() == 1 && c.q_slack == 0 && c.q_padding < 0;
  }
  // TND / NTD: leading requests of one row each (the decode requests; the FIA kernel runs the
  // rest of a mixed call), a paged cache, nothing read per (row, position).
  const bool reads_mask = c.mask != FiaMask::kNone && c.mask != FiaMask::kCompressed;
  return c.q_lens[0] == 1 && c.paged && !reads_mask && !c.pse;
}

// The requests of c on IFA's kernels when expect_on_ifa(c): the leading one-row requests (TND),
// else all.
int64_t expect_ifa_requests(const FiaCase& c) {
  if (!c.tnd()) return c.batch();
  int64_t k = 0;
  while (k < c.batch() && c.q_lens[k] == 1) ++k;
  return k;
}

bool plans_on_ifa(const FiaCase& c, std::string* describe, int64_t* requests = nullptr) {
  FiaCaseData data(c);
  const FiaArgs args = data.call();
  std::unique_ptr<FiaPlan> plan;
  EXPECT_EQ(FiaPlan::create(args, &plan), Status::kSuccess)
      << c.name() << ": " << last_error_message();
  if (plan == nullptr) return false;
  const core::FiaProblem& p = FiaPlanAccess::impl(*plan).problem;
  char buf[256];
  fia::describe(p, buf, sizeof(buf));
  *describe = buf;
  if (requests != nullptr) *requests = p.ifa_requests;
  return p.use_ifa;
}

TEST(FiaRoute, DecodeCallsRunOnIfaKernels) {
  int on_ifa = 0, split = 0;
  for (const FiaCase& c : fia_cases_for_run()) {
    const bool want = expect_on_ifa(c);
    std::string what;
    int64_t requests = 0;
    const bool got = plans_on_ifa(c, &what, &requests);
    EXPECT_EQ(got, want) << c.name() << " (" << what << ")";
    if (got && want) {
      EXPECT_EQ(requests, expect_ifa_requests(c)) << c.name();
    }
    (got ? on_ifa : split) += 1;
  }
  std::printf("fia route: %d cases on IFA's kernels, %d on the FIA kernel\n", on_ifa, split);
  EXPECT_GE(on_ifa, 20);
}

std::vector<std::byte> bytes_of(const TensorView& t) {
  const auto* p = static_cast<const std::byte*>(core::element0(t));
  return {p, p + t.numel() * static_cast<int64_t>(dtype_size(t.dtype))};
}

// The calls planned onto IFA's kernels give the same bits (output and LSE) for any thread count.
TEST(FiaRoute, IfaRouteDeterministicAcrossThreads) {
  int checked = 0;
  for (const FiaCase& c : fia_cases_for_run()) {
    if (!expect_on_ifa(c)) continue;
    FiaCaseData data(c);
    FiaArgs args = data.call();
    std::unique_ptr<FiaPlan> plan;
    ASSERT_EQ(FiaPlan::create(args, &plan), Status::kSuccess) << last_error_message();
    std::vector<std::byte> ws(plan->workspace_size());
    std::vector<std::byte> out1, lse1;
    for (int threads : {1, 2, 3, 7}) {
      data.poison_outputs();
      args.num_threads = threads;
      ASSERT_EQ(plan->run(args, ws.data(), ws.size()), Status::kSuccess) << c.name();
      const std::vector<std::byte> out = bytes_of(args.attention_out);
      const std::vector<std::byte> lse =
          args.softmax_lse_flag ? bytes_of(*args.softmax_lse) : std::vector<std::byte>{};
      if (threads == 1) {
        out1 = out, lse1 = lse;
      } else {
        EXPECT_EQ(out, out1) << c.name() << " threads=" << threads;
        EXPECT_EQ(lse, lse1) << c.name() << " threads=" << threads;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

// A mixed TND call's decode requests get the bits they get alone (the leading requests as a call
// of their own, vllm-ascend's A5 split): both run them on IFA's kernels.
TEST(FiaRoute, MixedCallDecodeRowsMatchDecodeCallAlone) {
  int checked = 0;
  for (const FiaCase& c : fia_cases_for_run()) {
    // TND in and out: rows [0, k) are the first k rows of the output's memory.
    if (c.layout != FiaLayout::kTnd || c.out != FiaOut::kSame || !expect_on_ifa(c)) continue;
    const int64_t k = expect_ifa_requests(c);
    if (k == c.batch()) continue;  // not mixed
    FiaCaseData data(c);
    FiaArgs whole = data.call();
    data.poison_outputs();
    ASSERT_EQ(fused_infer_attention_score(whole), Status::kSuccess) << last_error_message();
    const size_t row_bytes = static_cast<size_t>(c.num_heads * c.dv()) * dtype_size(c.out_dtype);
    const auto* out = static_cast<const std::byte*>(core::element0(whole.attention_out));
    const std::vector<std::byte> want(out, out + k * row_bytes);
    FiaArgs dec = whole;  // requests [0, k): their rows, lengths and block-table rows
    dec.query.shape[0] = k;
    dec.attention_out.shape[0] = k;
    dec.actual_seq_lengths->resize(static_cast<size_t>(k));
    dec.actual_seq_lengths_kv->resize(static_cast<size_t>(k));
    dec.block_table->shape[0] = k;
    if (dec.softmax_lse_flag) dec.softmax_lse->shape[0] = k;
    data.poison_outputs();
    ASSERT_EQ(fused_infer_attention_score(dec), Status::kSuccess) << last_error_message();
    EXPECT_EQ(std::memcmp(out, want.data(), want.size()), 0) << c.name();
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

// D4: a decode call's sparse_mode, pre_tokens and next_tokens are ignored and it needs no mask
// (docs/fia-semantics.md). Every combination plans onto IFA's kernels and gives the bits of the
// plain call (mode 0, no mask), which matches the fp64 reference.
TEST(FiaRoute, DecodeBranchIgnoresSparseMode) {
  for (FiaLayout layout : {FiaLayout::kBsh, FiaLayout::kBsnd, FiaLayout::kBnsd}) {
    FiaCase c;
    c.layout = layout;
    c.num_heads = 8, c.num_kv_heads = 2;
    c.q_lens = {1, 1, 1}, c.kv_lens = {12, 1, 40};
    c.lse = true;
    FiaCaseData data(c);
    data.poison_outputs();
    const FiaArgs plain = data.call();
    ASSERT_EQ(fused_infer_attention_score(plain), Status::kSuccess) << last_error_message();
    EXPECT_TRUE(compare_fia_output(c.name(), data.call(), reference::fia_reference(data.call())));
    const std::vector<std::byte> want = bytes_of(plain.attention_out);
    const std::vector<std::byte> want_lse = bytes_of(*plain.softmax_lse);
    std::vector<int8_t> compressed(2048 * 2048, 1);  // all masked: would hide everything if read
    struct Variant {
      int64_t mode, pre, next;
      int mask_rank;  // 0: none; 2-4: the compressed mask's rank
    };
    for (const Variant& v :
         {Variant{1, kFiaTokensMax, kFiaTokensMax, 0}, Variant{2, kFiaTokensMax, kFiaTokensMax, 2},
          Variant{2, kFiaTokensMax, kFiaTokensMax, 0}, Variant{3, kFiaTokensMax, kFiaTokensMax, 0},
          Variant{3, kFiaTokensMax, kFiaTokensMax, 4}, Variant{4, 0, 0, 0}, Variant{4, -5, 2, 3},
          Variant{0, -7, -7, 0}}) {
      FiaArgs a = plain;
      a.sparse_mode = v.mode, a.pre_tokens = v.pre, a.next_tokens = v.next;
      if (v.mask_rank > 0) {
        std::vector<int64_t> shape(static_cast<size_t>(v.mask_rank), 1);
        shape[shape.size() - 2] = shape.back() = 2048;
        a.atten_mask = TensorView::contiguous(compressed.data(), DType::kInt8, shape);
      }
      const std::string what = c.name() + " as mode " + std::to_string(v.mode) + " pre " +
                               std::to_string(v.pre) + " next " + std::to_string(v.next) +
                               " mask rank " + std::to_string(v.mask_rank);
      std::unique_ptr<FiaPlan> plan;
      ASSERT_EQ(FiaPlan::create(a, &plan), Status::kSuccess)
          << what << ": " << last_error_message();
      EXPECT_TRUE(FiaPlanAccess::impl(*plan).problem.use_ifa) << what;
      data.poison_outputs();
      std::vector<std::byte> ws(plan->workspace_size());
      ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << what;
      EXPECT_EQ(bytes_of(a.attention_out), want) << what;
      EXPECT_EQ(bytes_of(*a.softmax_lse), want_lse) << what;
    }
  }
}

// vllm-ascend's decode step (TND, paged BnBsH, mode 3, per-request KV lengths) with and without
// a sink and LSE, and its sliding-window variant (mode 4).
TEST(FiaRoute, VllmAscendDecodeStep) {
  for (int mode : {3, 4}) {
    for (bool sink : {false, true}) {
      FiaCase c;
      c.layout = FiaLayout::kTnd;
      c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
      c.num_heads = 32, c.num_kv_heads = 8, c.head_dim = 128;
      c.q_lens = {1, 1, 1}, c.kv_lens = {300, 129, 1};
      c.paged = true, c.block_size = 128;
      c.sparse_mode = mode, c.mask = FiaMask::kCompressed;
      if (mode == 4) c.pre_tokens = 128, c.next_tokens = 0;
      c.sink = sink, c.lse = sink;
      std::string what;
      EXPECT_TRUE(plans_on_ifa(c, &what)) << c.name();
      EXPECT_NE(what.find("(IFA kernels)"), std::string::npos) << what;
    }
  }
}

// Prefix caching: requests whose block-table rows name the same blocks, in a cache with fewer
// blocks than sum_b ceil(len_b / block_size) (vLLM's shared prefix blocks). Such a decode step
// stays on IFA's kernels (IFA's own calls allow it with IfaArgs::blocks_may_repeat) and matches
// the fp64 reference, which reads through the same table.
TEST(FiaRoute, SharedBlocksStayOnIfaKernels) {
  FiaCase c;
  c.layout = FiaLayout::kTnd;
  c.q_dtype = c.kv_dtype = c.out_dtype = DType::kBFloat16;
  c.num_heads = 8, c.num_kv_heads = 2, c.head_dim = 64;
  c.q_lens = {1, 1, 1}, c.kv_lens = {300, 300, 200};
  c.paged = true, c.block_size = 128;
  c.lse = true;
  FiaCaseData data(c);
  reference::FiaCall& a = data.mutable_call();
  const TensorView& bt = *a.block_table;
  // The three blocks request 0 reads, copied into a cache of three blocks; every row of the table
  // names them (request 2 reads the first 200 of request 0's positions).
  const int64_t per_block = a.key[0].shape[1] * a.key[0].shape[2];
  std::vector<uint16_t> key(3 * per_block), value(3 * per_block);
  for (int64_t j = 0; j < 3; ++j) {
    const auto id = static_cast<int64_t>(load_element(bt, element_at(bt, {0, j})));
    const int64_t first = element_at(a.key[0], {id, 0, 0}) * 2;  // bytes; value has key's shape
    std::memcpy(&key[j * per_block], static_cast<const std::byte*>(a.key[0].data) + first,
                per_block * 2);
    std::memcpy(&value[j * per_block], static_cast<const std::byte*>(a.value[0].data) + first,
                per_block * 2);
  }
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t j = 0; j < bt.shape[1]; ++j)
      store_element(bt, element_at(bt, {b, j}), j < 3 ? static_cast<double>(j) : -1.0);
  const std::vector<int64_t> shape = {3, a.key[0].shape[1], a.key[0].shape[2]};
  a.key[0] = TensorView::contiguous(key.data(), DType::kBFloat16, shape);
  a.value[0] = TensorView::contiguous(value.data(), DType::kBFloat16, shape);

  std::unique_ptr<FiaPlan> plan;
  ASSERT_EQ(FiaPlan::create(a, &plan), Status::kSuccess) << last_error_message();
  EXPECT_TRUE(FiaPlanAccess::impl(*plan).problem.use_ifa);
  data.poison_outputs();
  std::vector<std::byte> ws(plan->workspace_size());
  ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
  EXPECT_TRUE(compare_fia_output(c.name() + " with shared blocks", a, reference::fia_reference(a)));
}

}  // namespace
}  // namespace kvflash::testing
