// The C++ API (kvflash/*.hpp, C++20): DeepSeek-V3.2's sparse attention step. A
// LightningIndexerPlan picks each query row's top-K cached tokens (scores
// sum_h weights[h] * relu(q[h] . k), causal: row i of S1 sees the first S2 - S1 + i + 1 tokens),
// and an SfaPlan attends only those (MLA: 512 latent dims, 64 rope dims; the value is the latent
// part of the key). The indexer is checked against its double-precision scores (every selected
// token valid and distinct, none left out scoring above one selected, up to the fp16 rounding of
// the scores), the attention against a double-precision loop over the selected tokens; exits
// non-zero on a mismatch.
//
//   g++ dsa_step.cpp $(pkg-config --cflags --libs kvflash) $(pkg-config --variable=cxxflags kvflash)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <vector>

#include "aclnn/opdev/fp16_t.h"
#include "kvflash/li.hpp"
#include "kvflash/sfa.hpp"

namespace {

constexpr int64_t kS1 = 2, kS2 = 200, kTopK = 32;            // 2 query rows (MTP), 200 tokens
constexpr int64_t kLiHeads = 8, kLiD = 128;                  // the indexer's heads
constexpr int64_t kHeads = 16, kLatent = 512, kRope = 64;    // the attention's

std::vector<op::fp16_t> random_fp16(int64_t n, uint32_t seed) {
  std::vector<op::fp16_t> v(static_cast<size_t>(n));
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>((seed >> 8) * (2.0 / 16777216.0) - 1.0);
  }
  return v;
}

double f(op::fp16_t x) { return static_cast<float>(x); }

}  // namespace

int main() {
  using kvflash::DType;
  using kvflash::TensorView;
  int bad = 0;

  // The indexer, BSND (batch 1).
  auto liQ = random_fp16(kS1 * kLiHeads * kLiD, 1), liK = random_fp16(kS2 * kLiD, 2);
  std::vector<float> weights(kS1 * kLiHeads);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  std::vector<int32_t> topk(kS1 * kTopK);
  kvflash::LightningIndexerArgs li;
  li.query = TensorView::contiguous(liQ.data(), DType::kFloat16, {1, kS1, kLiHeads, kLiD});
  li.key = TensorView::contiguous(liK.data(), DType::kFloat16, {1, kS2, 1, kLiD});
  li.weights = TensorView::contiguous(weights.data(), DType::kFloat32, {1, kS1, kLiHeads});
  li.sparse_count = kTopK;
  li.sparse_mode = 3;
  li.sparse_indices = TensorView::contiguous(topk.data(), DType::kInt32, {1, kS1, 1, kTopK});
  std::unique_ptr<kvflash::LightningIndexerPlan> liPlan;
  if (kvflash::LightningIndexerPlan::create(li, &liPlan) != kvflash::Status::kSuccess) {
    std::printf("LightningIndexerPlan::create: %s\n", kvflash::last_error_message());
    return 1;
  }
  std::vector<std::byte> liWorkspace(liPlan->workspace_size());
  if (liPlan->run(li, liWorkspace.data(), liWorkspace.size()) != kvflash::Status::kSuccess) {
    std::printf("LightningIndexerPlan::run: %s\n", kvflash::last_error_message());
    return 1;
  }
  for (int64_t i = 0; i < kS1; ++i) {
    const int64_t visible = kS2 - kS1 + i + 1;
    std::vector<double> score(visible, 0.0);
    double scoreMax = 0;
    for (int64_t j = 0; j < visible; ++j) {
      for (int64_t h = 0; h < kLiHeads; ++h) {
        double dot = 0;
        for (int64_t d = 0; d < kLiD; ++d) dot += f(liQ[(i * kLiHeads + h) * kLiD + d]) * f(liK[j * kLiD + d]);
        score[j] += weights[i * kLiHeads + h] * std::max(dot, 0.0);
      }
      scoreMax = std::max(scoreMax, std::fabs(score[j]));
    }
    std::set<int32_t> picked(topk.begin() + i * kTopK, topk.begin() + (i + 1) * kTopK);
    double lowestPicked = INFINITY, highestLeft = -INFINITY;
    for (int64_t j = 0; j < visible; ++j) {
      if (picked.count(static_cast<int32_t>(j))) lowestPicked = std::min(lowestPicked, score[j]);
      else highestLeft = std::max(highestLeft, score[j]);
    }
    const bool valid = picked.size() == kTopK && *picked.begin() >= 0 && *picked.rbegin() < visible;
    if (!valid || lowestPicked < highestLeft - scoreMax / 1024) {
      std::printf("MISMATCH indexer row %lld: not the top %lld of %lld tokens\n", (long long)i,
                  (long long)kTopK, (long long)visible);
      ++bad;
    }
  }

  // The sparse attention over the selected tokens, BSND, the key as its own value.
  auto q = random_fp16(kS1 * kHeads * kLatent, 3), qRope = random_fp16(kS1 * kHeads * kRope, 4);
  auto kv = random_fp16(kS2 * kLatent, 5), kRopeCache = random_fp16(kS2 * kRope, 6);
  std::vector<op::fp16_t> out(kS1 * kHeads * kLatent);
  kvflash::SfaArgs sfa;
  sfa.query = TensorView::contiguous(q.data(), DType::kFloat16, {1, kS1, kHeads, kLatent});
  sfa.key = TensorView::contiguous(kv.data(), DType::kFloat16, {1, kS2, 1, kLatent});
  sfa.query_rope = TensorView::contiguous(qRope.data(), DType::kFloat16, {1, kS1, kHeads, kRope});
  sfa.key_rope = TensorView::contiguous(kRopeCache.data(), DType::kFloat16, {1, kS2, 1, kRope});
  sfa.sparse_indices = li.sparse_indices;
  sfa.scale_value = 1.0 / std::sqrt(static_cast<double>(kLatent + kRope));
  sfa.sparse_mode = 3;
  sfa.attention_out = TensorView::contiguous(out.data(), DType::kFloat16, {1, kS1, kHeads, kLatent});
  std::unique_ptr<kvflash::SfaPlan> sfaPlan;
  if (kvflash::SfaPlan::create(sfa, &sfaPlan) != kvflash::Status::kSuccess) {
    std::printf("SfaPlan::create: %s\n", kvflash::last_error_message());
    return 1;
  }
  std::vector<std::byte> sfaWorkspace(sfaPlan->workspace_size());
  if (sfaPlan->run(sfa, sfaWorkspace.data(), sfaWorkspace.size()) != kvflash::Status::kSuccess) {
    std::printf("SfaPlan::run: %s\n", kvflash::last_error_message());
    return 1;
  }
  const double scale = static_cast<float>(sfa.scale_value);
  for (int64_t i = 0; i < kS1; ++i) {
    for (int64_t h = 0; h < kHeads; ++h) {
      const auto* qh = &q[(i * kHeads + h) * kLatent];
      const auto* qr = &qRope[(i * kHeads + h) * kRope];
      std::vector<double> s(kTopK);
      double m = -INFINITY, sum = 0, vmax = 0;
      for (int64_t t = 0; t < kTopK; ++t) {
        const int64_t j = topk[i * kTopK + t];
        s[t] = 0;
        for (int64_t d = 0; d < kLatent; ++d) s[t] += f(qh[d]) * f(kv[j * kLatent + d]);
        for (int64_t d = 0; d < kRope; ++d) s[t] += f(qr[d]) * f(kRopeCache[j * kRope + d]);
        s[t] *= scale;
        m = std::max(m, s[t]);
      }
      for (int64_t t = 0; t < kTopK; ++t) sum += (s[t] = std::exp(s[t] - m));
      for (int64_t d = 0; d < kLatent; ++d) {
        double want = 0;
        for (int64_t t = 0; t < kTopK; ++t) {
          const double v = f(kv[topk[i * kTopK + t] * kLatent + d]);
          want += s[t] / sum * v;
          vmax = std::max(vmax, std::fabs(v));
        }
        // fp16 output: within 2^-10 of |want| plus 2^-10 of the largest |V| (docs/semantics.md §0.2).
        const double got = f(out[(i * kHeads + h) * kLatent + d]);
        if (std::fabs(got - want) > (vmax + std::fabs(want)) / 1024 && bad++ < 5)
          std::printf("MISMATCH sfa row %lld head %lld d %lld: %g, expected %g\n", (long long)i,
                      (long long)h, (long long)d, got, want);
      }
    }
  }
  std::printf("dsa_step: %s (%d mismatches)\n", bad == 0 ? "PASS" : "FAIL", bad);
  return bad == 0 ? 0 : 1;
}
