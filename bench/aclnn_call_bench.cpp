// The C API path against the C++ API on the same decode step: a CANN program's loop
// (aclnnIncreFlashAttentionV4GetWorkspaceSize, aclrtMalloc of the workspace, aclnnIncreFlashAttentionV4
// on a stream, aclrtSynchronizeStream, aclrtFree) and IfaPlan::run, alternated call by call on the
// same tensors (contiguous BNSD bf16, B x N query heads on KVN kv heads of D, S tokens), each call
// from cold caches (twice the last-level cache read before it, untimed) or warm. Prints the median
// and p10-p90 of each and their ratio: the overhead of the path CANN programs take (docs/perf-log.md,
// "The C API path"). Not a test: run it on quiet cores.
//   kvflash_aclnn_bench [S=32768] [calls=20] [cold|warm] [B=1] [N=32] [KVN=8] [D=128]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "kvflash/ifa.hpp"
#include "tools/cache_flush.hpp"

namespace {

using kvflash::DType;
using kvflash::IfaArgs;
using kvflash::IfaPlan;
using kvflash::TensorView;

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) st[i] = shape[i + 1] * st[i + 1];
  return st;
}

aclTensor* acl_tensor(void* data, const std::vector<int64_t>& shape) {
  const std::vector<int64_t> st = contiguous_strides(shape);
  return aclCreateTensor(shape.data(), shape.size(), ACL_BF16, st.data(), 0, ACL_FORMAT_ND,
                         shape.data(), shape.size(), data);
}

TensorView view(void* data, const std::vector<int64_t>& shape) {
  return TensorView::contiguous(data, DType::kBFloat16,
                                std::span<const int64_t>(shape.data(), shape.size()));
}

struct Stats {
  double median, p10, p90;
};
Stats stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) { return ms[static_cast<size_t>(q * (ms.size() - 1) + 0.5)]; };
  return {at(0.5), at(0.1), at(0.9)};
}

int fail(const char* what, int code) {
  std::printf("%s failed (%d): %s\n", what, code, aclGetRecentErrMsg());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t S = argc > 1 ? std::atoll(argv[1]) : 32768;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 20;
  const bool cold = !(argc > 3 && std::string(argv[3]) == "warm");
  const int64_t B = argc > 4 ? std::atoll(argv[4]) : 1, N = argc > 5 ? std::atoll(argv[5]) : 32;
  const int64_t KVN = argc > 6 ? std::atoll(argv[6]) : 8, D = argc > 7 ? std::atoll(argv[7]) : 128;
  if (S < 1 || calls < 1 || B < 1 || N < 1 || KVN < 1 || N % KVN != 0 || D < 1 || D > 512) {
    std::printf("usage: kvflash_aclnn_bench [S] [calls] [cold|warm] [B] [N] [KVN] [D]\n");
    return 2;
  }
  aclInit(nullptr);
  aclrtSetDevice(0);
  aclrtStream stream = nullptr;
  if (int r = aclrtCreateStream(&stream)) return fail("aclrtCreateStream", r);
  const std::vector<int64_t> qs = {B, N, 1, D}, ks = {B, KVN, S, D};
  const size_t q_bytes = static_cast<size_t>(B * N * D) * 2, k_bytes = static_cast<size_t>(B * KVN * S * D) * 2;
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  for (auto [p, n] : {std::pair{&q, q_bytes}, {&k, k_bytes}, {&v, k_bytes}, {&o, q_bytes}}) {
    if (int r = aclrtMalloc(p, n, ACL_MEM_MALLOC_HUGE_FIRST)) return fail("aclrtMalloc", r);
  }
  {
    std::vector<uint16_t> h(k_bytes / 2);
    for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(0x3c00 + (i * 7919 % 512));
    aclrtMemcpy(k, k_bytes, h.data(), k_bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(v, k_bytes, h.data(), k_bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(q, q_bytes, h.data(), q_bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  }
  aclTensor* qt = acl_tensor(q, qs);
  aclTensor* kt = acl_tensor(k, ks);
  aclTensor* vt = acl_tensor(v, ks);
  aclTensor* ot = acl_tensor(o, qs);
  aclTensorList* kl = aclCreateTensorList(&kt, 1);
  aclTensorList* vl = aclCreateTensorList(&vt, 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  char layout[] = "BNSD";

  IfaArgs args;
  args.query = view(q, qs);
  args.key = {view(k, ks)};
  args.value = {view(v, ks)};
  args.attention_out = view(o, qs);
  args.num_heads = N;
  args.num_key_value_heads = KVN;
  args.input_layout = "BNSD";
  args.scale_value = scale;
  std::unique_ptr<IfaPlan> plan;
  if (IfaPlan::create(args, &plan) != kvflash::Status::kSuccess) {
    std::printf("IfaPlan::create failed: %s\n", kvflash::last_error_message());
    return 1;
  }
  std::vector<std::byte> workspace(plan->workspace_size());

  kvflash::tools::CacheFlusher flusher(cold ? kvflash::tools::default_flush_bytes() : 0);
  std::vector<double> capi, cpp;
  for (int call = 0; call < calls + 2; ++call) {  // the first two calls of each are warm-up
    for (int path = 0; path < 2; ++path) {
      flusher.flush();
      const auto t0 = std::chrono::steady_clock::now();
      if (path == 0) {
        uint64_t ws = 0;
        aclOpExecutor* executor = nullptr;
        if (int r = aclnnIncreFlashAttentionV4GetWorkspaceSize(
                qt, kl, vl, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                nullptr, nullptr, nullptr, nullptr, N, scale, layout, KVN, 0, 1, ot, &ws, &executor)) {
          return fail("GetWorkspaceSize", r);
        }
        void* w = nullptr;
        if (ws > 0 && aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
          return fail("aclrtMalloc", 0);
        }
        if (int r = aclnnIncreFlashAttentionV4(w, ws, executor, stream)) return fail("launch", r);
        if (int r = aclrtSynchronizeStream(stream)) return fail("aclrtSynchronizeStream", r);
        if (w != nullptr) aclrtFree(w);
      } else if (plan->run(args, workspace.data(), workspace.size()) != kvflash::Status::kSuccess) {
        std::printf("IfaPlan::run failed: %s\n", kvflash::last_error_message());
        return 1;
      }
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (call >= 2) (path == 0 ? capi : cpp).push_back(ms);
    }
  }
  const Stats a = stats(capi), c = stats(cpp);
  std::printf("aclnn ifa B=%lld N=%lld KVN=%lld D=%lld S=%lld bf16 BNSD, %s caches, %d calls each\n",
              static_cast<long long>(B), static_cast<long long>(N), static_cast<long long>(KVN),
              static_cast<long long>(D), static_cast<long long>(S), cold ? "cold" : "warm", calls);
  std::printf("  C API + stream: median %.3f ms (p10-p90 %.3f-%.3f)\n", a.median, a.p10, a.p90);
  std::printf("  C++ IfaPlan:    median %.3f ms (p10-p90 %.3f-%.3f)\n", c.median, c.p10, c.p90);
  std::printf("  C API / C++:    %.3f\n", a.median / c.median);
  return 0;
}
