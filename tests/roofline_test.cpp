// The benchmark rows' roofline (tools/roofline.hpp) on cases worked out by hand: each operator's
// FLOPs and bytes, the ceiling rule per dtype and engine, and the roofline's bound and fraction.
#include "roofline.hpp"

#include <gtest/gtest.h>

namespace kvflash::tools {
namespace {

TEST(Roofline, IfaDecodeWork) {
  // b2 s8192 n32 kvn8 d128 bf16: tokens 16384; QK + PV 4 * 16384 * 32 * 128 = 268,435,456 FLOPs;
  // K + V 2 * 16384 * 8 * 128 * 2 = 67,108,864 bytes, query + output 2 * 2 * 32 * 128 * 2 = 32,768.
  const Work w = ifa_decode_work(16384, 2, 32, 8, 128, 2, 2);
  EXPECT_DOUBLE_EQ(w.flops, 268435456.0);
  EXPECT_DOUBLE_EQ(w.bytes, 67108864.0 + 32768.0);
  EXPECT_NEAR(w.intensity(), 268435456.0 / 67141632.0, 1e-12);  // ~4: the GQA group of 4 x 1
  // int8 KV: one byte an element, query and output stay 16-bit.
  const Work q = ifa_decode_work(16384, 2, 32, 8, 128, 1, 2);
  EXPECT_DOUBLE_EQ(q.bytes, 33554432.0 + 32768.0);
  EXPECT_DOUBLE_EQ(q.flops, w.flops);
}

TEST(Roofline, PrefillWork) {
  // Causal S = 4 (pairs 1 + 2 + 3 + 4 = 10), n2 kvn1 d16 bf16: 4 * 10 * 2 * 16 = 1280 FLOPs;
  // Q and O 2 * 4 * 2 * 16 * 2 = 512 bytes, K and V 2 * 4 * 1 * 16 * 2 = 256.
  const Work w = prefill_work(10, 4, 4, 2, 1, 16, 2, 2);
  EXPECT_DOUBLE_EQ(w.flops, 1280.0);
  EXPECT_DOUBLE_EQ(w.bytes, 768.0);
  EXPECT_DOUBLE_EQ(w.intensity(), 1280.0 / 768.0);
}

TEST(Roofline, SfaWork) {
  // 100 selected tokens, b1, n2, bf16: 2 * 100 * 2 * (576 + 512) = 435,200 FLOPs; gathered
  // rows 100 * 576 * 2 = 115,200 bytes, query 2 * 576 * 2 = 2304 and output 2 * 512 * 2 = 2048.
  const Work w = sfa_work(100, 1, 2, 2);
  EXPECT_DOUBLE_EQ(w.flops, 435200.0);
  EXPECT_DOUBLE_EQ(w.bytes, 115200.0 + 2304.0 + 2048.0);
}

TEST(Roofline, IndexerWork) {
  // 2 requests, 4 rows (next_n 2), 10 keys, 3 heads: 2 * 4 * 10 * 3 * 128 = 30,720 FLOPs; keys
  // 2 * 10 * 128 * 2 = 5120 bytes once per request, queries and weights 4 * 3 * 129 * 2 = 3096.
  const Work w = li_work(2, 4, 10, 3, 2);
  EXPECT_DOUBLE_EQ(w.flops, 30720.0);
  EXPECT_DOUBLE_EQ(w.bytes, 5120.0 + 3096.0);
}

TEST(Roofline, KvCacheWork) {
  // 3 tokens of 256-byte rows: K and V read and written 4 * 3 * 256 = 3072 bytes, slots 12.
  const Work w = kv_cache_work(3, 256);
  EXPECT_DOUBLE_EQ(w.flops, 0.0);
  EXPECT_DOUBLE_EQ(w.bytes, 3084.0);
  EXPECT_DOUBLE_EQ(w.intensity(), 0.0);
}

TEST(Roofline, CeilingRule) {
  const ComputePeaks amx_machine{/*bf16=*/240, /*fma=*/470, /*amx=*/7200};
  // On the tiles: the AMX peak for bf16 and int8, half of it for fp16 (two bf16 pieces).
  EXPECT_EQ(compute_ceiling(RowDtype::kBf16, true, amx_machine).engine, "amx");
  EXPECT_DOUBLE_EQ(compute_ceiling(RowDtype::kBf16, true, amx_machine).gflops, 7200);
  EXPECT_DOUBLE_EQ(compute_ceiling(RowDtype::kInt8, true, amx_machine).gflops, 7200);
  EXPECT_EQ(compute_ceiling(RowDtype::kFp16, true, amx_machine).engine, "amx/2");
  EXPECT_DOUBLE_EQ(compute_ceiling(RowDtype::kFp16, true, amx_machine).gflops, 3600);
  // Off the tiles: the faster vector loop (here the FMA, as on the 2-core Xeon VM).
  EXPECT_EQ(compute_ceiling(RowDtype::kBf16, false, amx_machine).engine, "fma");
  EXPECT_DOUBLE_EQ(compute_ceiling(RowDtype::kBf16, false, amx_machine).gflops, 470);
  // A machine whose vdpbf16ps beats its FMA (Zen 4 class): bf16 takes vdpbf16ps, fp16 half of it
  // unless the FMA is faster.
  const ComputePeaks zen{/*bf16=*/1000, /*fma=*/400, /*amx=*/0};
  EXPECT_EQ(compute_ceiling(RowDtype::kBf16, true, zen).engine, "vdpbf16ps");  // no AMX: vector
  EXPECT_DOUBLE_EQ(compute_ceiling(RowDtype::kBf16, true, zen).gflops, 1000);
  EXPECT_EQ(compute_ceiling(RowDtype::kFp16, false, zen).engine, "vdpbf16ps/2");
  EXPECT_DOUBLE_EQ(compute_ceiling(RowDtype::kFp16, false, zen).gflops, 500);
  const ComputePeaks slow_dot{/*bf16=*/600, /*fma=*/400, /*amx=*/0};
  EXPECT_EQ(compute_ceiling(RowDtype::kFp16, false, slow_dot).engine, "fma");
  // Nothing measured: no ceiling.
  EXPECT_EQ(compute_ceiling(RowDtype::kBf16, false, ComputePeaks{}).gflops, 0);
  EXPECT_EQ(row_dtype("fp16"), RowDtype::kFp16);
  EXPECT_EQ(row_dtype("int8t"), RowDtype::kInt8);
  EXPECT_EQ(row_dtype("bf16"), RowDtype::kBf16);
}

TEST(Roofline, UsablePeaksFollowTheKernelsIsa) {
  const ComputePeaks all{240, 470, 7200};
  const ComputePeaks vec = usable_peaks(all, cpu::Isa::kAvx512Bf16);
  EXPECT_EQ(vec.amx, 0);
  EXPECT_EQ(vec.bf16, 240);
  const ComputePeaks plain = usable_peaks(all, cpu::Isa::kAvx512);
  EXPECT_EQ(plain.bf16, 0);
  EXPECT_EQ(plain.fma, 470);
  EXPECT_EQ(usable_peaks(all, cpu::Isa::kScalar).fma, 0);
}

TEST(Roofline, MemoryBoundRow) {
  // 1e9 bytes and 4e9 FLOPs at 32 GB/s and 470 GFLOP/s: memory 31.25 ms, compute 8.51 ms. Measured
  // 50 ms: 0.625 of the roofline.
  const Roofline r = roofline({4e9, 1e9}, 50.0, 32.0, {"fma", 470});
  ASSERT_TRUE(r.valid);
  EXPECT_DOUBLE_EQ(r.intensity, 4.0);
  EXPECT_DOUBLE_EQ(r.memory_ms, 31.25);
  EXPECT_NEAR(r.compute_ms, 4e9 / 470e9 * 1e3, 1e-12);
  EXPECT_DOUBLE_EQ(r.ms, 31.25);
  EXPECT_EQ(r.bound, "memory");
  EXPECT_DOUBLE_EQ(r.fraction, 0.625);
  EXPECT_DOUBLE_EQ(r.gflops, 128.0);  // bandwidth x intensity
}

TEST(Roofline, ComputeBoundRow) {
  // SFA-like: 1e7 bytes, 4.7e11 FLOPs: memory 0.3125 ms, compute at 470 GFLOP/s 1000 ms; measured
  // 2000 ms: 0.5 of the roofline, bound by the FMA.
  const Roofline r = roofline({4.7e11, 1e7}, 2000.0, 32.0, {"fma", 470});
  EXPECT_EQ(r.bound, "fma");
  EXPECT_DOUBLE_EQ(r.ms, 1000.0);
  EXPECT_DOUBLE_EQ(r.fraction, 0.5);
  EXPECT_DOUBLE_EQ(r.gflops, 470.0);
  EXPECT_NE(describe_roofline(r, 32.0, {"fma", 470}).find("fma-bound: 470 GFLOP/s"),
            std::string::npos);
}

TEST(Roofline, NoBandwidthNoRoofline) {
  const Roofline r = roofline({1, 1}, 1.0, 0.0, {"amx", 7200});
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(describe_roofline(r, 0.0, {"amx", 7200}), "");
  // Without a compute ceiling a row with FLOPs is held to the memory roof alone.
  const Roofline m = roofline({1e9, 1e9}, 100.0, 20.0, {});
  EXPECT_EQ(m.bound, "memory");
  EXPECT_DOUBLE_EQ(m.ms, 50.0);
}

}  // namespace
}  // namespace kvflash::tools
