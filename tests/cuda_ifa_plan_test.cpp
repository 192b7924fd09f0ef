// The IFA CUDA backend's host side, which is plain C++ and runs here without a GPU
// (cuda/ifa/ifa_cuda_plan.hpp): the split-KV schedule (the CPU's chunks), the chunk -> sequence
// lookup the kernels use, the workspace layout, the launch geometry's limits, the per-run sequence
// table (pointer arithmetic checked against the tensors' own addressing). The fault record's status
// and message are tests/device_fault_test.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu/ifa/ifa_workspace.hpp"
#include "cuda/ifa/ifa_cuda_plan.hpp"
#include "kvflash/ifa.hpp"
#include "ops/ifa/ifa_bind.hpp"
#include "ops/ifa/ifa_problem.hpp"
#include "ops/ifa/ifa_validate.hpp"
#include "support/ifa_cases.hpp"

namespace kvflash {
namespace {

using testing::IfaCase;
using testing::IfaCaseData;
using testing::IfaLayout;

core::IfaProblem problem_of(const IfaArgs& a) {
  core::IfaProblem p;
  EXPECT_EQ(ifa::validate_ifa(a, &p), Status::kSuccess) << last_error_message();
  return p;
}

IfaCase base_case() {
  IfaCase c;
  c.layout = IfaLayout::kBsh;
  c.batch = 3;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.kv_lens = {1000, 0, 513};
  return c;
}

// The entry refuses, by name, what FIA's decode branch adds to IFA's problem (its kernels do not
// implement it), and takes IFA's own problems.
TEST(CudaIfaPlan, SupportsNamesFiaOnlyFeatures) {
  IfaCaseData data(base_case());
  const core::IfaProblem plain = problem_of(data.args());
  const char* why = nullptr;
  EXPECT_TRUE(cuda::ifa_cuda_supports(plain, &why));
  EXPECT_EQ(why, nullptr);
  const std::pair<void (*)(core::IfaProblem*), const char*> features[] = {
      {[](core::IfaProblem* p) { p->has_sink = true; }, "a learnable sink"},
      {[](core::IfaProblem* p) { p->split_antiquant = true; }, "split key / value antiquant"},
      {[](core::IfaProblem* p) { p->token_v = true; }, "per-token antiquant"},
      {[](core::IfaProblem* p) { p->kv_start = {0, 0, 3}; }, "a sliding-window start"},
      {[](core::IfaProblem* p) { p->empty_lse = __builtin_inff(); }, "FIA's empty-row LSE (+inf)"},
  };
  for (const auto& [set, name] : features) {
    core::IfaProblem p = plain;
    set(&p);
    why = nullptr;
    EXPECT_FALSE(cuda::ifa_cuda_supports(p, &why)) << name;
    EXPECT_STREQ(why, name);
  }
}

TEST(CudaIfaPlan, ChunksAreTheCpus) {
  for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{511}, int64_t{512}, int64_t{513},
                      int64_t{131072}, int64_t{131073}}) {
    EXPECT_EQ(cuda::ifa_cuda_num_chunks(len), cpu::ifa_num_chunks(len)) << len;
  }
}

// Every global chunk maps to the sequence that owns it, also around empty sequences (which share
// their successor's first chunk) at the start, middle and end of the batch.
TEST(CudaIfaPlan, FindBatchOwnsEveryChunk) {
  const std::vector<std::vector<int64_t>> batches = {
      {1}, {0, 5000}, {1000, 0, 0, 513, 0}, {512, 512, 1, 0}, {0, 0, 1}};
  for (const auto& lens : batches) {
    std::vector<int64_t> first(lens.size());
    int64_t total = 0;
    for (size_t b = 0; b < lens.size(); ++b) {
      first[b] = total;
      total += cuda::ifa_cuda_num_chunks(lens[b]);
    }
    const auto at = [&](int64_t b) { return first[static_cast<size_t>(b)]; };
    for (int64_t cg = 0; cg < total; ++cg) {
      const int64_t b =
          cuda::ifa_cuda_find_batch(at, static_cast<int64_t>(lens.size()), cg);
      ASSERT_GE(cg, first[b]);
      ASSERT_LT(cg, first[b] + cuda::ifa_cuda_num_chunks(lens[b])) << "chunk " << cg;
    }
  }
}

// What the chunk kernel writes and the merge reads, replayed on the host with the kernels' own
// index functions: every (chunk CTA, head) writes its own slot inside the slots array, the slots
// cover it exactly, and the merge of (b, h) reads chunk c of b from the slot the CTA of that chunk
// wrote; the chunk ranges split each attended range at the CPU's points.
TEST(CudaIfaPlan, ChunkKernelAndMergeAgreeOnSlots) {
  core::IfaProblem p;
  p.batch = 5;
  p.num_kv_heads = 3;
  p.group = 20;  // two head blocks: 16 + 4 query heads
  p.num_heads = 60;
  p.head_dim = 72;
  p.kv_len = {0, 1500, 512, 0, 1};
  const std::vector<int64_t> first_pos = {0, 7, 0, 3, 100};  // left padding moves the ranges
  const cuda::IfaCudaLayout l = cuda::ifa_cuda_layout(p);
  const cuda::IfaCudaGeometry geo = cuda::ifa_cuda_geometry(p);
  const int64_t total = cuda::ifa_cuda_total_chunks(p);
  std::vector<cuda::IfaCudaSeq> seqs(5);
  int64_t at = 0;
  for (size_t b = 0; b < 5; ++b) {
    seqs[b].kv_len = p.kv_len[b];
    seqs[b].chunk_first = at;
    at += cuda::ifa_cuda_num_chunks(p.kv_len[b]);
  }
  ASSERT_EQ(total, at);
  const auto first = [&](int64_t b) { return seqs[static_cast<size_t>(b)].chunk_first; };
  // Writer of every float of the slots array: (b, chunk, h) packed, -1 = nobody.
  const int64_t floats = total * p.num_kv_heads * p.group * l.head_floats;
  std::vector<int64_t> writer(static_cast<size_t>(floats), -1);
  const auto key = [&](int64_t b, int64_t c, int64_t h) { return (b * 1000 + c) * 1000 + h; };
  std::vector<std::vector<cuda::IfaCudaRange>> ranges(5);
  for (int64_t x = 0; x < geo.chunk_ctas; ++x) {
    const int64_t cg = x / p.num_kv_heads, n2 = x % p.num_kv_heads;
    const int64_t b = cuda::ifa_cuda_find_batch(first, p.batch, cg);
    const int64_t c = cg - first(b);
    if (n2 == 0) {
      ranges[static_cast<size_t>(b)].push_back(
          cuda::ifa_cuda_chunk_range(first_pos[static_cast<size_t>(b)], p.kv_len[b], c));
    }
    for (int hb = 0; hb < geo.head_blocks; ++hb) {
      const int64_t h_first = int64_t{hb} * geo.heads_per_cta;
      const int64_t nh = std::min<int64_t>(geo.heads_per_cta, p.group - h_first);
      for (int64_t i = 0; i < nh; ++i) {
        const int64_t off = cuda::ifa_cuda_slot(cg, n2, h_first, p.num_kv_heads, p.group,
                                                l.head_floats) +
                            i * l.head_floats;
        ASSERT_GE(off, 0);
        ASSERT_LE(off + l.head_floats, floats);
        for (int64_t f = off; f < off + l.head_floats; ++f) {
          ASSERT_EQ(writer[static_cast<size_t>(f)], -1) << "two writers of float " << f;
          writer[static_cast<size_t>(f)] = key(b, c, n2 * p.group + h_first + i);
        }
      }
    }
  }
  for (int64_t w : writer) ASSERT_NE(w, -1) << "a slot float nobody writes";
  for (int64_t b = 0; b < p.batch; ++b) {
    const auto& r = ranges[static_cast<size_t>(b)];
    ASSERT_EQ(static_cast<int64_t>(r.size()), cpu::ifa_num_chunks(p.kv_len[b]));
    const int64_t end = first_pos[static_cast<size_t>(b)] + p.kv_len[b];
    int64_t pos = first_pos[static_cast<size_t>(b)];
    for (const cuda::IfaCudaRange& x : r) {
      EXPECT_EQ(x.begin, pos);
      EXPECT_EQ(x.end - x.begin, std::min(cpu::kIfaChunkLen, end - x.begin));
      pos = x.end;
    }
    EXPECT_EQ(pos, end);
    for (int64_t h = 0; h < p.num_heads; ++h) {
      const int64_t n2 = h / p.group, g = h % p.group;
      for (int64_t c = 0; c < cpu::ifa_num_chunks(p.kv_len[b]); ++c) {
        const int64_t off = cuda::ifa_cuda_slot(first(b) + c, n2, g, p.num_kv_heads, p.group,
                                                l.head_floats);
        ASSERT_EQ(writer[static_cast<size_t>(off)], key(b, c, h)) << "merge of " << b << ", " << h;
      }
    }
  }
}

TEST(CudaIfaPlan, LayoutIsAlignedAndDisjoint) {
  for (const int64_t batch : {int64_t{1}, int64_t{3}, int64_t{41}, int64_t{300}}) {
    core::IfaProblem p;
    p.batch = batch;
    p.num_kv_heads = 2;
    p.group = 4;
    p.num_heads = 8;
    p.head_dim = 64;
    p.kv_len.assign(static_cast<size_t>(batch), 700);
    p.kv_len[0] = 0;
    const cuda::IfaCudaLayout l = cuda::ifa_cuda_layout(p);
    EXPECT_EQ(l.fault, 0u) << "core::fault_record_at finds the record without the plan";
    const size_t offsets[] = {l.fault, l.seqs, l.kv_begin, l.state, l.bad_slot, l.slots};
    const size_t nb = static_cast<size_t>(batch);
    const size_t sizes[] = {
        sizeof(core::FaultRecord), sizeof(cuda::IfaCudaSeq) * nb, 8 * nb, 4 * nb, 8 * nb, 0};
    for (size_t i = 0; i + 1 < std::size(offsets); ++i) {
      EXPECT_EQ(offsets[i] % 256, 0u);
      EXPECT_LE(offsets[i] + sizes[i], offsets[i + 1]) << "array " << i << " overlaps the next";
    }
    const int64_t chunks = (batch - 1) * 2;  // 700 positions: 2 chunks each
    EXPECT_EQ(cuda::ifa_cuda_total_chunks(p), chunks);
    EXPECT_EQ(l.head_floats, 64 + cuda::kIfaCudaHeaderFloats);
    const size_t slot_bytes = sizeof(float) * chunks * p.num_kv_heads * p.group * l.head_floats;
    EXPECT_GE(l.bytes, l.slots + slot_bytes + 255) << "alignment slack";
    EXPECT_EQ(cuda::ifa_cuda_workspace_size(p), l.bytes);
  }
}

// Shared memory fits every supported part for every head dim and group the validator accepts,
// and the head blocks cover the group.
TEST(CudaIfaPlan, GeometryFitsEveryShape) {
  for (const DType kv : {DType::kFloat16, DType::kInt8}) {
    for (int64_t d = 1; d <= cpu::kIfaMaxHeadDim; d += (d < 32 ? 1 : 16)) {
      for (int64_t g : {int64_t{1}, int64_t{5}, int64_t{8}, int64_t{16}, int64_t{17},
                        int64_t{64}}) {
        core::IfaProblem p;
        p.batch = 2;
        p.num_kv_heads = 3;
        p.group = g;
        p.num_heads = 3 * g;
        p.head_dim = d;
        p.k.dtype = p.v.dtype = kv;
        p.kv_len = {513, 0};
        const cuda::IfaCudaGeometry geo = cuda::ifa_cuda_geometry(p);
        ASSERT_LE(geo.smem_bytes, cuda::kIfaCudaMaxSmem) << "D " << d << " G " << g;
        ASSERT_GE(static_cast<int64_t>(geo.heads_per_cta) * geo.head_blocks, g);
        ASSERT_LT(static_cast<int64_t>(geo.heads_per_cta) * (geo.head_blocks - 1), g);
        ASSERT_LE(geo.heads_per_cta, cuda::kIfaCudaMaxHeads);
        ASSERT_EQ(geo.row_bytes % 16, 0);
        ASSERT_GE(geo.row_bytes, d * (kv == DType::kInt8 ? 1 : 2) + 16);
        ASSERT_EQ(geo.chunk_ctas, 2 * 3);
        ASSERT_EQ(geo.merge_ctas, 2 * 3 * g);
        ASSERT_EQ(geo.uploads, 1);
      }
    }
  }
}

// The table's base and strides address the same bytes as the tensor views do, for contiguous,
// strided, list and paged (both cache layouts) KV; chunk numbering continues across uploads.
TEST(CudaIfaPlan, SequenceTableAddressesTheTensors) {
  std::vector<IfaCase> cases;
  IfaCase c = base_case();
  cases.push_back(c);
  c.layout = IfaLayout::kBnsd;
  c.strided = true;
  cases.push_back(c);
  c = base_case();
  c.layout = IfaLayout::kBsnd;
  c.list_mode = true;
  cases.push_back(c);
  c = base_case();
  c.paged = true;
  c.block_size = 16;
  cases.push_back(c);
  c.layout = IfaLayout::kBnsd;
  c.cache_bnsd = true;
  cases.push_back(c);
  for (const IfaCase& ic : cases) {
    SCOPED_TRACE(ic.name());
    IfaCaseData data(ic);
    const IfaArgs& a = data.args();
    const core::IfaProblem p = problem_of(a);
    core::IfaData bound;
    ifa::bind_data(p, a, &bound);
    std::vector<cuda::IfaCudaSeq> all(static_cast<size_t>(p.batch));
    cuda::ifa_cuda_seq_entries(p, bound, 0, static_cast<int>(p.batch), all.data());
    int64_t chunks = 0;
    for (int64_t b = 0; b < p.batch; ++b) {
      const cuda::IfaCudaSeq& s = all[static_cast<size_t>(b)];
      EXPECT_EQ(s.kv_len, p.kv_len[b]);
      EXPECT_EQ(s.chunk_first, chunks);
      chunks += cuda::ifa_cuda_num_chunks(s.kv_len);
      cuda::IfaCudaSeq one;
      cuda::ifa_cuda_seq_entries(p, bound, b, 1, &one);
      EXPECT_EQ(one.chunk_first, s.chunk_first) << "an upload starting at batch " << b;
      EXPECT_EQ(one.k_base, s.k_base);
      // Element (b, j=1 or the block's offset 1, n2=1, d=2) of K through the table vs the view.
      const int64_t n2 = 1, d = 2, j = 1;
      const TensorView& k = a.key[p.k.list ? static_cast<size_t>(b) : 0];
      const auto* el = static_cast<const std::byte*>(k.data);
      const int64_t es = 2;
      const auto* got = static_cast<const std::byte*>(s.k_base) +
                        (j * s.k_s_pos + n2 * s.k_s_head + d * s.k_s_dim) * es;
      int64_t want = k.offset;
      if (p.k.paged) {
        // The cache's block 0: (block, pos, h*D) or (block, n2, pos, d).
        want += k.rank == 3 ? j * k.strides[1] + (n2 * p.head_dim + d) * k.strides[2]
                            : n2 * k.strides[1] + j * k.strides[2] + d * k.strides[3];
      } else {
        const int64_t bi = p.k.list ? 0 : b;
        switch (ic.layout) {
          case IfaLayout::kBsh:
            want += bi * k.strides[0] + j * k.strides[1] + (n2 * p.head_dim + d) * k.strides[2];
            break;
          case IfaLayout::kBsnd:
            want += bi * k.strides[0] + j * k.strides[1] + n2 * k.strides[2] + d * k.strides[3];
            break;
          case IfaLayout::kBnsd:
            want += bi * k.strides[0] + n2 * k.strides[1] + j * k.strides[2] + d * k.strides[3];
            break;
        }
      }
      EXPECT_EQ(got, el + want * es) << "batch " << b;
    }
    EXPECT_EQ(cuda::ifa_cuda_total_chunks(p), chunks);
  }
}

// The kernels take the plan's params by value (the CPU kernels' struct, sliced from the problem):
// plain data, and the chunk count the grid is sized by.
TEST(CudaIfaPlan, KernelsTakeThePlansParams) {
  static_assert(std::is_trivially_copyable_v<core::IfaParams>);
  static_assert(std::is_trivially_copyable_v<core::IfaData>);
  IfaCase c = base_case();
  c.lse = true;
  c.mask = testing::MaskShape::kBS;
  c.pse = testing::PseShape::kBroadcast;
  IfaCaseData data(c);
  const core::IfaProblem p = problem_of(data.args());
  const core::IfaParams& q = p;
  EXPECT_TRUE(q.mask.present);
  EXPECT_TRUE(q.pse.present);
  EXPECT_EQ(q.pse.s0, 0) << "broadcast batch";
  EXPECT_TRUE(q.has_lse);
  EXPECT_EQ(cuda::ifa_cuda_total_chunks(p), 2 + 0 + 2);
}

}  // namespace
}  // namespace kvflash
