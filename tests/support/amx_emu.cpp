// The software model of the AMX tiles (support/amx_emu.hpp). Compiled with the plain flags.
#include "support/amx_emu.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kvflash::testing {
namespace {

struct State {
  cpu::amx::TileConfig config;
  bool configured = false;
  alignas(64) uint8_t tile[cpu::amx::kNumTiles][cpu::amx::kTileRows * cpu::amx::kTileRowBytes];
};

// Per thread, as the CPU's tile state is.
State& state() {
  static thread_local State s;
  return s;
}

const State& check(int t) {
  const State& s = state();
  if (!s.configured) throw std::logic_error("tile instruction without ldtilecfg");
  if (s.config.rows[t] == 0) throw std::logic_error("tile " + std::to_string(t) + " unconfigured");
  return s;
}

float f32(const uint8_t* tile, int index) {
  float x;
  std::memcpy(&x, tile + 4 * index, 4);
  return x;
}

// A bf16 input, subnormals read as (signed) zero.
float bf16(const uint8_t* tile, int index) {
  uint16_t h;
  std::memcpy(&h, tile + 2 * index, 2);
  if ((h & 0x7f80u) == 0) h &= 0x8000u;
  return std::bit_cast<float>(uint32_t{h} << 16);
}

float ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

}  // namespace

void EmuTiles::configure(const cpu::amx::TileConfig& c) {
  if (c.palette_id != 1) throw std::logic_error("ldtilecfg: palette must be 1");
  for (int t = 0; t < cpu::amx::kNumTiles; ++t) {
    if (c.rows[t] > cpu::amx::kTileRows || c.colsb[t] > cpu::amx::kTileRowBytes ||
        (c.rows[t] == 0) != (c.colsb[t] == 0)) {
      throw std::logic_error("ldtilecfg: bad shape of tile " + std::to_string(t));
    }
  }
  State& s = state();
  s.config = c;
  s.configured = true;
  std::memset(s.tile, 0, sizeof s.tile);  // ldtilecfg zeroes the tiles
}

void EmuTiles::release() {
  State& s = state();
  s.configured = false;
  std::memset(s.tile, 0, sizeof s.tile);
}

void EmuTiles::load_tile(int t, const void* base, ptrdiff_t stride) {
  const State& s = check(t);
  uint8_t* dst = state().tile[t];
  std::memset(dst, 0, sizeof state().tile[t]);
  for (int r = 0; r < s.config.rows[t]; ++r) {
    std::memcpy(dst + r * cpu::amx::kTileRowBytes, static_cast<const uint8_t*>(base) + r * stride,
                s.config.colsb[t]);
  }
}

void EmuTiles::store_tile(int t, void* base, ptrdiff_t stride) {
  const State& s = check(t);
  for (int r = 0; r < s.config.rows[t]; ++r) {
    std::memcpy(static_cast<uint8_t*>(base) + r * stride, s.tile[t] + r * cpu::amx::kTileRowBytes,
                s.config.colsb[t]);
  }
}

void EmuTiles::zero_tile(int t) {
  check(t);
  std::memset(state().tile[t], 0, sizeof state().tile[t]);
}

void EmuTiles::dot_tiles(int c, int a, int b) {
  check(c), check(a), check(b);
  State& s = state();
  const auto& cf = s.config;
  if (cf.rows[c] != cf.rows[a] || cf.colsb[c] != cf.colsb[b] || cf.colsb[a] / 4 != cf.rows[b] ||
      cf.colsb[a] % 4 != 0 || cf.colsb[c] % 4 != 0) {
    throw std::logic_error("tdpbf16ps: shapes do not match");
  }
  const int rows = cf.rows[c], cols = cf.colsb[c] / 4, pairs = cf.colsb[a] / 4;
  for (int m = 0; m < rows; ++m) {
    for (int n = 0; n < cols; ++n) {
      float acc = f32(s.tile[c], m * 16 + n);
      for (int k = 0; k < pairs; ++k) {
        for (int j = 0; j < 2; ++j) {
          const float prod =
              ftz(bf16(s.tile[a], m * 32 + 2 * k + j) * bf16(s.tile[b], k * 32 + 2 * n + j));
          acc = ftz(acc + prod);
        }
      }
      std::memcpy(s.tile[c] + (m * 16 + n) * 4, &acc, 4);
    }
  }
}

}  // namespace kvflash::testing
