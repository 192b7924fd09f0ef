// Determinism and isolation (docs/semantics.md §0.2 item 4): output bits do not depend on the run,
// the thread count or the other sequences of the batch; poisoned unused slots never reach the
// output; a block table that references a block outside the cache is refused at run time with the
// output untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "support/ifa_cases.hpp"
#include "support/ifa_run.hpp"
#include "support/ifa_slice.hpp"
#include "support/workspace_buffer.hpp"

namespace kvflash::testing {
namespace {

constexpr int kThreadCounts[] = {1, 2, 3, 8};

std::string hex_diff(const std::vector<std::byte>& x, const std::vector<std::byte>& y) {
  if (x.size() != y.size()) return "sizes differ";
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != y[i]) return "first differing byte at " + std::to_string(i);
  }
  return "identical";
}

// The same call for batch b alone: every batched view sliced to batch b, fresh outputs.
struct SingleBatch {
  IfaArgs args;
  std::vector<std::byte> out, lse;
};

SingleBatch single_batch(const IfaCaseData& data, int64_t b) {
  const IfaArgs& a = data.args();
  SingleBatch s;
  s.args = batch_inputs(a, b);
  IfaArgs& x = s.args;
  TensorView o = slice_batch(a.attention_out, 0);
  s.out.resize(static_cast<size_t>(o.numel()) * dtype_size(o.dtype));
  o.data = s.out.data();
  x.attention_out = o;
  if (a.softmax_lse) {
    TensorView l = slice_batch(*a.softmax_lse, 0);
    s.lse.resize(static_cast<size_t>(l.numel()) * sizeof(float));
    l.data = s.lse.data();
    x.softmax_lse = l;
  }
  return s;
}

class IfaDeterminismTest : public ::testing::TestWithParam<IfaCase> {};

TEST_P(IfaDeterminismTest, BitsIndependentOfRunsAndThreads) {
  IfaCaseData data(GetParam());
  for (cpu::Isa isa : isas_to_test()) {
    ScopedIsaCap cap(isa);
    std::vector<std::byte> first_out, first_lse;
    for (int threads : kThreadCounts) {
      for (int rep = 0; rep < 2; ++rep) {
        data.poison_outputs();
        data.mutable_args().num_threads = threads;
        ASSERT_TRUE(run_ifa(data.args())) << GetParam().name();
        if (first_out.empty()) {
          first_out = data.output_bytes();
          first_lse = data.lse_bytes();
          continue;
        }
        ASSERT_TRUE(data.output_bytes() == first_out)
            << GetParam().name() << " isa=" << cpu::isa_name(isa) << " threads=" << threads
            << " rep=" << rep << ": " << hex_diff(data.output_bytes(), first_out);
        ASSERT_TRUE(data.lse_bytes() == first_lse)
            << GetParam().name() << " isa=" << cpu::isa_name(isa) << " threads=" << threads;
      }
    }
  }
}

// On every ISA and the emulated matrix engine (ifa_paths).
TEST_P(IfaDeterminismTest, SequenceAloneEqualsSequenceInBatch) {
  const IfaCase& c = GetParam();
  IfaCaseData data(c);
  for (const IfaPath& path : ifa_paths()) {
    data.mutable_args().num_threads = 3;
    ASSERT_TRUE(path.run(data.args())) << c.name();
    const std::vector<std::byte> all = data.output_bytes();
    const std::vector<std::byte> all_lse = data.lse_bytes();
    const size_t per_batch = all.size() / static_cast<size_t>(c.batch);
    for (int64_t b = 0; b < c.batch; ++b) {
      SingleBatch s = single_batch(data, b);
      s.args.num_threads = 2;
      ASSERT_TRUE(path.run(s.args)) << c.name() << " batch " << b << " alone";
      const std::vector<std::byte> part(all.begin() + b * per_batch,
                                        all.begin() + (b + 1) * per_batch);
      ASSERT_TRUE(s.out == part) << c.name() << " path=" << path.name << ": batch " << b
                                 << " alone differs from batch " << b << " in the batch ("
                                 << hex_diff(s.out, part) << ")";
      if (!all_lse.empty()) {
        const size_t per = all_lse.size() / static_cast<size_t>(c.batch);
        const std::vector<std::byte> lpart(all_lse.begin() + b * per,
                                           all_lse.begin() + (b + 1) * per);
        ASSERT_TRUE(s.lse == lpart) << c.name() << ": LSE of batch " << b << " alone differs";
      }
    }
  }
}

// Every unused slot (beyond lengths, left-padding region, unused blocks, strided gaps) holds
// NaN/inf; none of it may reach a floating-point output.
TEST_P(IfaDeterminismTest, PoisonNeverReachesOutput) {
  const IfaCase& c = GetParam();
  IfaCaseData data(c);
  data.mutable_args().num_threads = 2;
  ASSERT_TRUE(run_ifa(data.args())) << c.name();
  const TensorView& o = data.args().attention_out;
  // int8 outputs cannot hold NaN; the sweep checks their values.
  const std::vector<std::byte> bytes =
      o.dtype == DType::kInt8 ? std::vector<std::byte>{} : data.output_bytes();
  if (o.dtype == DType::kFloat32) {
    for (size_t i = 0; i + 3 < bytes.size(); i += 4) {
      float x;
      std::memcpy(&x, bytes.data() + i, 4);
      ASSERT_TRUE(std::isfinite(x)) << c.name() << ": non-finite output element " << i / 4;
    }
  } else {
    for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + i, 2);
      const bool nan_or_inf =
          o.dtype == DType::kFloat16 ? (h & 0x7c00u) == 0x7c00u : (h & 0x7f80u) == 0x7f80u;
      ASSERT_FALSE(nan_or_inf) << c.name() << ": non-finite output element " << i / 2;
    }
  }
  for (float l : [&] {
         std::vector<float> v(data.lse_bytes().size() / sizeof(float));
         if (!v.empty()) std::memcpy(v.data(), data.lse_bytes().data(), v.size() * sizeof(float));
         return v;
       }()) {
    ASSERT_FALSE(std::isnan(l)) << c.name() << ": NaN LSE";
  }
}

std::vector<IfaCase> determinism_cases() {
  // The determinism checks run on the cases whose structure matters for them: several sequences,
  // long ones (split-KV), paged, list and strided inputs. Small single cases add nothing here.
  std::vector<IfaCase> picked;
  for (const IfaCase& c : ifa_cases_for_run()) {
    if (c.batch > 1 || c.max_len() >= 1000 || c.paged || c.list_mode || c.strided)
      picked.push_back(c);
  }
  return picked;
}

INSTANTIATE_TEST_SUITE_P(Cases, IfaDeterminismTest, ::testing::ValuesIn(determinism_cases()),
                         [](const ::testing::TestParamInfo<IfaCase>& info) {
                           return info.param.test_name();
                         });

// ---- bad block ids -----------------------------------------------------------------------------

IfaCase paged_case() {
  IfaCase c;
  c.layout = IfaLayout::kBsh;
  c.batch = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.kv_lens = {40, 70};
  c.paged = true;
  c.block_size = 16;
  c.lse = true;
  return c;
}

void set_table(const IfaArgs& a, int64_t b, int64_t slot, int32_t id) {
  const TensorView& t = *a.block_table;
  auto* p = static_cast<int32_t*>(t.data) + t.offset + b * t.strides[0] + slot * t.strides[1];
  *p = id;
}

int32_t get_table(const IfaArgs& a, int64_t b, int64_t slot) {
  const TensorView& t = *a.block_table;
  return *(static_cast<const int32_t*>(t.data) + t.offset + b * t.strides[0] + slot * t.strides[1]);
}

bool is_nan_half(const std::byte* p, DType dtype) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return dtype == DType::kFloat16 ? (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0
                                  : (h & 0x7F80) == 0x7F80 && (h & 0x007F) != 0;
}

// Decision 13b: a referenced bad id is found by the run (in stream order), never dereferenced;
// its batch's outputs are NaN, the other batches are computed, and the run reports kInvalid.
TEST(IfaBlockTable, ReferencedIdOutsideCacheFaultsItsBatchOnly) {
  for (int32_t bad : {-1, -5, 0x7fffffff}) {
    IfaCaseData data(paged_case());
    const IfaArgs& a = data.args();
    std::unique_ptr<IfaPlan> plan;
    ASSERT_EQ(IfaPlan::create(a, &plan), Status::kSuccess) << last_error_message();
    WorkspaceBuffer ws(plan->workspace_size());
    ASSERT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
    const std::vector<std::byte> good_out = data.output_bytes(), good_lse = data.lse_bytes();
    const int64_t row_elems = a.attention_out.numel() / a.attention_out.shape[0];
    const size_t es = dtype_size(a.attention_out.dtype);
    const int64_t heads = a.num_heads;
    // Slot 4 of batch 1 holds positions 64..69 (length 70, block size 16): referenced.
    const int32_t good = get_table(a, 1, 4);
    for (int32_t id : {bad, static_cast<int32_t>(data.num_blocks())}) {
      set_table(a, 1, 4, id);
      data.poison_outputs();
      EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kInvalid) << "block id " << id;
      EXPECT_NE(std::string(last_error_message()).find("block_table[1][4] (" + std::to_string(id)),
                std::string::npos)
          << last_error_message();
      const std::vector<std::byte> out = data.output_bytes(), lse = data.lse_bytes();
      for (int64_t b = 0; b < a.attention_out.shape[0]; ++b) {
        for (int64_t i = 0; i < row_elems; ++i) {
          const size_t at = static_cast<size_t>(b * row_elems + i) * es;
          if (b == 1) {
            ASSERT_TRUE(is_nan_half(&out[at], a.attention_out.dtype)) << "element " << i;
          } else {
            ASSERT_EQ(std::memcmp(&out[at], &good_out[at], es), 0) << "batch " << b;
          }
        }
        for (int64_t h = 0; h < heads; ++h) {
          float x, g;
          std::memcpy(&x, &lse[static_cast<size_t>(b * heads + h) * 4], 4);
          std::memcpy(&g, &good_lse[static_cast<size_t>(b * heads + h) * 4], 4);
          if (b == 1) {
            EXPECT_TRUE(std::isnan(x));
          } else {
            EXPECT_EQ(std::memcmp(&x, &g, 4), 0);
          }
        }
      }
    }
    // The table is read at run time: restoring it makes the same plan succeed, same bits.
    set_table(a, 1, 4, good);
    EXPECT_EQ(plan->run(a, ws.data(), ws.size()), Status::kSuccess) << last_error_message();
    EXPECT_TRUE(data.output_bytes() == good_out);
  }
}

TEST(IfaBlockTable, UnreferencedSlotsMayHoldAnything) {
  IfaCaseData data(paged_case());
  const IfaArgs& a = data.args();
  // Batch 0 (length 40) uses slots 0..2; slot 3 and beyond are never read.
  for (int64_t slot = 3; slot < a.block_table->shape[1]; ++slot) set_table(a, 0, slot, 1 << 30);
  EXPECT_TRUE(run_ifa(a));
}

}  // namespace
}  // namespace kvflash::testing
