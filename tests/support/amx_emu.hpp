// A software model of the AMX tiles with the tile-operations interface of
// src/cpu/amx/amx_tile.hpp, so the AMX microkernels (amx_kernels-inl.h) run and are checked
// against the fp64 reference on machines without AMX. It follows the Intel SDM's description:
// loads fill `rows` x `colsb` bytes and zero the rest of the tile; tdpbf16ps adds, per element,
// the pair products in order (k, then the pair) into fp32 with round to nearest even, bf16
// subnormal inputs read as zero and subnormal results flushed to zero; the shape checks the
// instruction makes (#UD on a mismatch) throw std::logic_error here. The CPU's own order of
// summation differs (docs/perf.md, round 3): the tests compare both with the same fp64 bound.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cpu/amx/amx_tile.hpp"

namespace kvflash::testing {

struct EmuTiles {
  struct State {
    cpu::amx::TileConfig config;
    bool configured = false;
    alignas(64) uint8_t tile[cpu::amx::kNumTiles][cpu::amx::kTileRows * cpu::amx::kTileRowBytes];
  };
  static State& state() {
    static thread_local State s;
    return s;
  }

  static void configure(const cpu::amx::TileConfig& c) {
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
  static void release() {
    State& s = state();
    s.configured = false;
    std::memset(s.tile, 0, sizeof s.tile);
  }

  template <int t>
  static void load(const void* base, ptrdiff_t stride) {
    const State& s = check(t);
    uint8_t* dst = state().tile[t];
    std::memset(dst, 0, sizeof state().tile[t]);
    for (int r = 0; r < s.config.rows[t]; ++r) {
      std::memcpy(dst + r * cpu::amx::kTileRowBytes, static_cast<const uint8_t*>(base) + r * stride,
                  s.config.colsb[t]);
    }
  }
  template <int t>
  static void store(void* base, ptrdiff_t stride) {
    const State& s = check(t);
    for (int r = 0; r < s.config.rows[t]; ++r) {
      std::memcpy(static_cast<uint8_t*>(base) + r * stride,
                  s.tile[t] + r * cpu::amx::kTileRowBytes, s.config.colsb[t]);
    }
  }
  template <int t>
  static void zero() {
    check(t);
    std::memset(state().tile[t], 0, sizeof state().tile[t]);
  }

  template <int c, int a, int b>
  static void dpbf16ps() {
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
            const float prod = ftz(bf16(s.tile[a], m * 32 + 2 * k + j) *
                                   bf16(s.tile[b], k * 32 + 2 * n + j));
            acc = ftz(acc + prod);
          }
        }
        std::memcpy(s.tile[c] + (m * 16 + n) * 4, &acc, 4);
      }
    }
  }

 private:
  static const State& check(int t) {
    const State& s = state();
    if (!s.configured) throw std::logic_error("tile instruction without ldtilecfg");
    if (s.config.rows[t] == 0) throw std::logic_error("tile " + std::to_string(t) + " unconfigured");
    return s;
  }
  static float f32(const uint8_t* tile, int index) {
    float x;
    std::memcpy(&x, tile + 4 * index, 4);
    return x;
  }
  // A bf16 input, subnormals read as (signed) zero.
  static float bf16(const uint8_t* tile, int index) {
    uint16_t h;
    std::memcpy(&h, tile + 2 * index, 2);
    if ((h & 0x7f80u) == 0) h &= 0x8000u;
    return std::bit_cast<float>(uint32_t{h} << 16);
  }
  static float ftz(float x) {
    return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
  }
};

}  // namespace kvflash::testing
