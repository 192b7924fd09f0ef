// The C++ API (kvflash/*.hpp, C++20): one decode step of FusedInferAttentionScore with its KV
// cache split in two along the sequence, as two ranks of context parallelism hold it, each part
// run by its own FiaPlan (fp32 output and the softmax LSE), then the parts merged by a MergePlan
// into the fp16 result. Checks the merged output and LSE against a double-precision loop over the
// whole cache and exits non-zero on any mismatch.
//
//   g++ context_parallel_decode.cpp $(pkg-config --cflags --libs kvflash)
//       $(pkg-config --variable=cxxflags kvflash)    (one line; docs/api.md, "Building a program")
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "aclnn/opdev/fp16_t.h"
#include "kvflash/fia.hpp"
#include "kvflash/merge.hpp"

namespace {

// B sequences, N query heads on KVN KV heads of D, S cached tokens each, split at kSplit.
constexpr int64_t kB = 2, kN = 8, kKvN = 2, kD = 64, kS = 40, kSplit = 24;

// Deterministic data in [-1, 1), already fp16 values.
std::vector<op::fp16_t> random_fp16(int64_t n, uint32_t seed) {
  std::vector<op::fp16_t> v(static_cast<size_t>(n));
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>((seed >> 8) * (2.0 / 16777216.0) - 1.0);
  }
  return v;
}

// The FIA arguments of one decode step over `len` tokens of key/value (BSH, fp16): fp32 output
// (kvflash's extension: the unrounded result the merge takes) and the LSE.
kvflash::FiaArgs decode_args(op::fp16_t* q, op::fp16_t* k, op::fp16_t* v, int64_t len,
                             float* out, float* lse) {
  kvflash::FiaArgs args;
  args.query = kvflash::TensorView::contiguous(q, kvflash::DType::kFloat16, {kB, 1, kN * kD});
  args.key = {kvflash::TensorView::contiguous(k, kvflash::DType::kFloat16, {kB, len, kKvN * kD})};
  args.value = {kvflash::TensorView::contiguous(v, kvflash::DType::kFloat16, {kB, len, kKvN * kD})};
  args.attention_out = kvflash::TensorView::contiguous(out, kvflash::DType::kFloat32, {kB, 1, kN * kD});
  args.softmax_lse_flag = true;
  args.softmax_lse = kvflash::TensorView::contiguous(lse, kvflash::DType::kFloat32, {kB, kN, 1, 1});
  args.num_heads = kN;
  args.num_key_value_heads = kKvN;
  args.scale = 1.0 / std::sqrt(static_cast<double>(kD));
  args.input_layout = "BSH";
  return args;
}

bool run(const kvflash::FiaArgs& args) {
  std::unique_ptr<kvflash::FiaPlan> plan;
  if (kvflash::FiaPlan::create(args, &plan) != kvflash::Status::kSuccess) {
    std::printf("FiaPlan::create: %s\n", kvflash::last_error_message());
    return false;
  }
  std::vector<std::byte> workspace(plan->workspace_size());
  if (plan->run(args, workspace.data(), workspace.size()) != kvflash::Status::kSuccess) {
    std::printf("FiaPlan::run: %s\n", kvflash::last_error_message());
    return false;
  }
  return true;
}

}  // namespace

int main() {
  std::vector<op::fp16_t> q = random_fp16(kB * kN * kD, 1);
  std::vector<op::fp16_t> k = random_fp16(kB * kS * kKvN * kD, 2);
  std::vector<op::fp16_t> v = random_fp16(kB * kS * kKvN * kD, 3);
  // The two ranks' shards: tokens [0, kSplit) and [kSplit, kS) of every sequence.
  const int64_t row = kKvN * kD, lens[2] = {kSplit, kS - kSplit};
  std::vector<op::fp16_t> kPart[2], vPart[2];
  for (int p = 0; p < 2; ++p) {
    const int64_t first = p == 0 ? 0 : kSplit;
    for (int64_t b = 0; b < kB; ++b) {
      const auto* kb = k.data() + (b * kS + first) * row;
      const auto* vb = v.data() + (b * kS + first) * row;
      kPart[p].insert(kPart[p].end(), kb, kb + lens[p] * row);
      vPart[p].insert(vPart[p].end(), vb, vb + lens[p] * row);
    }
  }

  // Each rank's attention over its shard.
  std::vector<float> partOut[2], partLse[2];
  for (int p = 0; p < 2; ++p) {
    partOut[p].resize(kB * kN * kD);
    partLse[p].resize(kB * kN);
    if (!run(decode_args(q.data(), kPart[p].data(), vPart[p].data(), lens[p], partOut[p].data(),
                         partLse[p].data())))
      return 1;
  }

  // The merge, in aclnnAttentionUpdate's list form: rows (B, N), head dim D.
  std::vector<op::fp16_t> out(kB * kN * kD);
  std::vector<float> outLse(kB * kN);
  kvflash::MergeArgs merge;
  for (int p = 0; p < 2; ++p) {
    merge.partial_out_list.push_back(
        kvflash::TensorView::contiguous(partOut[p].data(), kvflash::DType::kFloat32, {kB, kN, kD}));
    merge.partial_lse_list.push_back(
        kvflash::TensorView::contiguous(partLse[p].data(), kvflash::DType::kFloat32, {kB, kN}));
  }
  merge.out = kvflash::TensorView::contiguous(out.data(), kvflash::DType::kFloat16, {kB, kN, kD});
  merge.out_lse = kvflash::TensorView::contiguous(outLse.data(), kvflash::DType::kFloat32, {kB, kN});
  std::unique_ptr<kvflash::MergePlan> mergePlan;
  if (kvflash::MergePlan::create(merge, &mergePlan) != kvflash::Status::kSuccess ||
      mergePlan->run(merge, nullptr, 0) != kvflash::Status::kSuccess) {
    std::printf("merge: %s\n", kvflash::last_error_message());
    return 1;
  }

  // The whole cache in double precision: head h reads KV head h / (N / KVN).
  int bad = 0;
  const double scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kD)));
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t h = 0; h < kN; ++h) {
      const int64_t kvh = h / (kN / kKvN);
      std::vector<double> s(kS);
      double m = -INFINITY, sum = 0, vmax = 0;
      for (int64_t j = 0; j < kS; ++j) {
        s[j] = 0;
        for (int64_t d = 0; d < kD; ++d)
          s[j] += double(float(q[(b * kN + h) * kD + d])) * float(k[(b * kS + j) * row + kvh * kD + d]);
        s[j] *= scale;
        m = std::fmax(m, s[j]);
      }
      for (int64_t j = 0; j < kS; ++j) sum += std::exp(s[j] - m);
      const double lse = m + std::log(sum);
      if (std::fabs(outLse[b * kN + h] - lse) > 1e-4 * (1 + std::fabs(lse)) && bad++ < 5)
        std::printf("MISMATCH lse b=%lld h=%lld: %g, expected %g\n", (long long)b, (long long)h,
                    outLse[b * kN + h], lse);
      for (int64_t d = 0; d < kD; ++d) {
        double want = 0;
        for (int64_t j = 0; j < kS; ++j) {
          const double vj = float(v[(b * kS + j) * row + kvh * kD + d]);
          want += std::exp(s[j] - lse) * vj;
          vmax = std::fmax(vmax, std::fabs(vj));
        }
        // fp16 output: within 2^-10 of |want| plus 2^-10 of the largest |V| (docs/semantics.md §0.2).
        const double got = float(out[(b * kN + h) * kD + d]);
        if (std::fabs(got - want) > (vmax + std::fabs(want)) / 1024 && bad++ < 5)
          std::printf("MISMATCH out b=%lld h=%lld d=%lld: %g, expected %g\n", (long long)b,
                      (long long)h, (long long)d, got, want);
      }
    }
  }
  std::printf("context_parallel_decode: %s (%d mismatches of %lld)\n", bad == 0 ? "PASS" : "FAIL",
              bad, static_cast<long long>(kB * kN * (kD + 1)));
  return bad == 0 ? 0 : 1;
}
