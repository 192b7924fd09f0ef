// A query row's bits depend on its own sequence only, not on which rows share its call: the last
// R rows of a causal prefill, run as a call of their own over the same keys (mode 3 then gives
// them the same band), get the bits they get inside the whole call. This is chunked prefill's
// promise (vllm-ascend computes a prompt in chunks; the demo's and bench's sample checks compare
// the same way), at every ISA this CPU has (the bf16 paths decide per row whether a key tile is
// whole, so the rows beside a row cannot change how its weights are rounded) and on the cpu-amx
// entry's prefill kernels on the software model of the tiles.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "kvflash/fia.hpp"
#include "support/fia_cases.hpp"
#include "support/fia_emu_tiles.hpp"
#include "support/fia_run.hpp"
#include "support/ifa_run.hpp"
#include "support/workspace_buffer.hpp"

namespace kvflash::testing {
namespace {

std::vector<std::byte> bytes_of(const TensorView& t) {
  const auto* p = static_cast<const std::byte*>(t.data);
  return {p, p + t.numel() * static_cast<int64_t>(dtype_size(t.dtype))};
}

// Through the public API at the current ISA cap, or on kernel table k.
::testing::AssertionResult run(const reference::FiaCall& call, const cpu::FiaKernels* k) {
  FiaArgs args = call;
  args.num_threads = 2;
  if (k != nullptr) return run_fia_kernels(args, *k);
  std::unique_ptr<FiaPlan> plan;
  if (FiaPlan::create(args, &plan) != Status::kSuccess) {
    return ::testing::AssertionFailure() << "create: " << last_error_message();
  }
  WorkspaceBuffer ws(plan->workspace_size());
  if (plan->run(args, ws.data(), ws.size()) != Status::kSuccess) {
    return ::testing::AssertionFailure() << "run: " << last_error_message();
  }
  return ::testing::AssertionSuccess();
}

struct Shape {
  DType dtype;
  int64_t heads, kv_heads, dim, q, kv, tail;  // tail: the rows of the second call
};

class FiaChunking : public ::testing::TestWithParam<Shape> {};

TEST_P(FiaChunking, LastRowsAloneGetTheirBitsInTheWholeCall) {
  const Shape sh = GetParam();
  FiaCase whole;
  whole.layout = FiaLayout::kBsnd;
  whole.q_dtype = whole.kv_dtype = whole.out_dtype = sh.dtype;
  whole.num_heads = sh.heads, whole.num_kv_heads = sh.kv_heads, whole.head_dim = sh.dim;
  whole.q_lens = {sh.q}, whole.kv_lens = {sh.kv};
  whole.q_slack = 0, whole.kv_slack = 0;
  whole.sparse_mode = 3, whole.mask = FiaMask::kCompressed;
  FiaCase part = whole;
  part.q_lens = {sh.tail};
  FiaCaseData wd(whole), pd(part);
  // The part's keys and values are the whole call's, its queries the whole call's last rows.
  const size_t row = static_cast<size_t>(sh.heads * sh.dim) * dtype_size(sh.dtype);
  const reference::FiaCall& wc = wd.call();
  reference::FiaCall& pc = pd.mutable_call();
  std::memcpy(pc.key[0].data, wc.key[0].data, bytes_of(wc.key[0]).size());
  std::memcpy(pc.value[0].data, wc.value[0].data, bytes_of(wc.value[0]).size());
  std::memcpy(pc.query.data, static_cast<const std::byte*>(wc.query.data) + (sh.q - sh.tail) * row,
              sh.tail * row);
  const auto check = [&](const cpu::FiaKernels* k) {
    wd.poison_outputs();
    pd.poison_outputs();
    ASSERT_TRUE(run(wc, k));
    ASSERT_TRUE(run(pc, k));
    const std::vector<std::byte> w = bytes_of(wc.attention_out), p = bytes_of(pc.attention_out);
    for (int64_t r = 0; r < sh.tail; ++r) {
      EXPECT_EQ(std::memcmp(p.data() + r * row, w.data() + (sh.q - sh.tail + r) * row, row), 0)
          << "row " << sh.q - sh.tail + r << " of " << sh.q;
    }
  };
  for (cpu::Isa isa : isas_to_test()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    ScopedIsaCap cap(isa);
    check(nullptr);
  }
  if (cpu::detected_isa() >= cpu::Isa::kAvx512Bf16) {
    SCOPED_TRACE("emulated amx");
    check(&kFiaKernelsEmuTiles);
  }
}

// bf16 (the bf16 P·V paths) and fp16; G = 2 (33 x 2 score rows, one query tile) and G = 4; tails
// that start inside a key tile's causal edge.
INSTANTIATE_TEST_SUITE_P(Shapes, FiaChunking,
                         ::testing::Values(Shape{DType::kBFloat16, 4, 2, 64, 33, 80, 32},
                                           Shape{DType::kBFloat16, 8, 2, 128, 150, 150, 70},
                                           Shape{DType::kBFloat16, 4, 4, 64, 100, 230, 37},
                                           Shape{DType::kFloat16, 4, 2, 64, 33, 80, 32}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           const Shape& s = info.param;
                           return std::string(s.dtype == DType::kBFloat16 ? "bf16" : "fp16") +
                                  "_g" + std::to_string(s.heads / s.kv_heads) + "_q" +
                                  std::to_string(s.q) + "_kv" + std::to_string(s.kv) + "_tail" +
                                  std::to_string(s.tail);
                         });

}  // namespace
}  // namespace kvflash::testing
