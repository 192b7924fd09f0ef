// The matrix engine's tile configuration, and the tile operations the AMX microkernels are
// written against (src/cpu/amx/amx_kernels-inl.h).
//
// The kernels are templates over a tile-operations type Ops with static members
//   configure(const TileConfig&), release(),
//   load<t>(const void* base, ptrdiff_t stride_bytes), store<t>(void*, ptrdiff_t), zero<t>(),
//   dpbf16ps<c, a, b>()   (tile c += tile a x tile b, bf16 pairs, fp32 accumulation),
// with tile numbers as template arguments (the instructions encode them). HwTiles below runs them
// on the CPU (only in translation units built with the AMX flags, *_amx.cpp); the tests run the
// same kernels on a software model of the tiles (tests/support/amx_emu.hpp) on machines without
// AMX, so the layouts, tails and splitting are checked everywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvflash::cpu::amx {

// Palette 1 (CPUID 0x1D.1, checked by src/cpu/isa.cpp before the amx level is detected): 8 tiles
// of at most 16 rows of 64 bytes.
inline constexpr int kNumTiles = 8;
inline constexpr int kTileRows = 16;
inline constexpr int kTileRowBytes = 64;
// bf16 elements in a tile row: the channels one A-operand row holds, and so the K step of one
// tdpbf16ps (32 products summed into each element).
inline constexpr int kTileK = kTileRowBytes / 2;

/// The 64-byte operand of ldtilecfg (Intel SDM: palette, start row, 14 reserved bytes, then the
/// bytes per row of tiles 0-15 and the rows of tiles 0-15; tiles 8-15 stay 0 in palette 1).
struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

/// The tile roles of the decode palette: two score accumulators (S^T = K · Q^T, 16 keys x m
/// heads each), their two K operands (16 keys x 32 channels, rows straight from the cache), the
/// packed query operand, and for P·V the output accumulator (m heads x 16 channels), the
/// probability operand (m heads x 32 keys) and the value operand (16 key pairs x 16 channels).
/// One configuration serves a task's QK and P·V, so a kernel never reconfigures mid-task.
enum DecodeTile : int {
  kTileS0 = 0,
  kTileS1 = 1,
  kTileK0 = 2,
  kTileK1 = 3,
  kTileQ = 4,
  kTileO = 5,
  kTileP = 6,
  kTileV = 7,
};

/// The largest query-head count of one decode tile pass (m rows of the P·V tiles, m 4-byte
/// columns of the score tiles).
inline constexpr int kMaxHeads = 16;

/// The decode palette for m heads (1 <= m <= kMaxHeads).
constexpr TileConfig decode_palette(int m) {
  TileConfig c;
  const auto set = [&c](int t, int rows, int colsb) {
    c.rows[t] = static_cast<uint8_t>(rows);
    c.colsb[t] = static_cast<uint16_t>(colsb);
  };
  set(kTileS0, kTileRows, 4 * m);
  set(kTileS1, kTileRows, 4 * m);
  set(kTileK0, kTileRows, kTileRowBytes);
  set(kTileK1, kTileRows, kTileRowBytes);
  set(kTileQ, kTileRows, 4 * m);  // 16 channel pairs x m heads x 2 bf16
  set(kTileO, m, kTileRowBytes);  // m heads x 16 fp32 channels
  set(kTileP, m, kTileRowBytes);  // m heads x 32 bf16 keys
  set(kTileV, kTileRows, kTileRowBytes);  // 16 key pairs x 16 channels x 2 bf16
  return c;
}

/// Every tile 16 rows of 64 bytes: the palette of kernels whose operands and accumulators are all
/// whole tiles (the FIA prefill products, the indexer's scores; their roles are their own).
constexpr TileConfig uniform_palette() {
  TileConfig c;
  for (int t = 0; t < kNumTiles; ++t) {
    c.rows[t] = kTileRows;
    c.colsb[t] = kTileRowBytes;
  }
  return c;
}

// GCC spells the flag macros __AMX_TILE__ / __AMX_BF16__, clang __AMXTILE__ / __AMXBF16__.
#if (defined(__AMX_TILE__) && defined(__AMX_BF16__)) || (defined(__AMXTILE__) && defined(__AMXBF16__))
/// The tile operations on the CPU. Hand-written asm rather than GCC 12's <immintrin.h> macros:
/// those tell the compiler neither that tileloadd reads memory nor that ldtilecfg reads all 64
/// bytes, so stores that fill a staging buffer or the configuration could be moved after the
/// instruction that reads them. Every statement here clobbers memory instead.
struct HwTiles {
  static void configure(const TileConfig& c) {
    __asm__ volatile("ldtilecfg %0" : : "m"(c) : "memory");
  }
  static void release() { __asm__ volatile("tilerelease" : : : "memory"); }
  template <int t>
  static void load(const void* base, ptrdiff_t stride) {
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2"
                     :
                     : "r"(base), "r"(stride), "i"(t)
                     : "memory");
  }
  template <int t>
  static void store(void* base, ptrdiff_t stride) {
    __asm__ volatile("tilestored %%tmm%c2, (%0,%1,1)"
                     :
                     : "r"(base), "r"(stride), "i"(t)
                     : "memory");
  }
  template <int t>
  static void zero() {
    __asm__ volatile("tilezero %%tmm%c0" : : "i"(t) : "memory");
  }
  template <int c, int a, int b>
  static void dpbf16ps() {
    __asm__ volatile("tdpbf16ps %%tmm%c2, %%tmm%c1, %%tmm%c0"
                     :
                     : "i"(c), "i"(a), "i"(b)
                     : "memory");
  }
};
#endif

/// Loads a configuration for the lifetime of the object and releases the tile state after (so a
/// task's 8 KiB of tile data stops travelling with context switches once it is done).
template <class Ops>
class BasicTileScope {
 public:
  explicit BasicTileScope(const TileConfig& c) { Ops::configure(c); }
  ~BasicTileScope() { Ops::release(); }
  BasicTileScope(const BasicTileScope&) = delete;
  BasicTileScope& operator=(const BasicTileScope&) = delete;
};

}  // namespace kvflash::cpu::amx
