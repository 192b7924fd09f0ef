// A software model of the AMX tiles with the tile-operations interface of
// src/cpu/amx/amx_tile.hpp, so the AMX microkernels (amx_kernels-inl.h) run and are checked
// against the fp64 reference on machines without AMX. It follows the Intel SDM's description:
// loads fill `rows` x `colsb` bytes and zero the rest of the tile; tdpbf16ps adds, per element,
// the pair products in order (k, then the pair) into fp32 with round to nearest even, bf16
// subnormal inputs read as zero and subnormal results flushed to zero; the shape checks the
// instruction makes (#UD on a mismatch) throw std::logic_error here. The CPU's own order of
// summation differs (docs/perf-log.md, round 3): the tests compare both with the same fp64 bound.
//
// The templates only forward to functions compiled once, in support/amx_emu.cpp with the plain
// flags: translation units built with ISA flags (support/ifa_emu_tiles_amx.cpp) include this
// header too, and an inline function they instantiated could be the copy the linker keeps for the
// plain ones.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/amx/amx_tile.hpp"

namespace kvflash::testing {

struct EmuTiles {
  static void configure(const cpu::amx::TileConfig& c);
  static void release();

  template <int t>
  static void load(const void* base, ptrdiff_t stride) {
    load_tile(t, base, stride);
  }
  template <int t>
  static void store(void* base, ptrdiff_t stride) {
    store_tile(t, base, stride);
  }
  template <int t>
  static void zero() {
    zero_tile(t);
  }
  template <int c, int a, int b>
  static void dpbf16ps() {
    dot_tiles(c, a, b);
  }

  static void load_tile(int t, const void* base, ptrdiff_t stride);
  static void store_tile(int t, void* base, ptrdiff_t stride);
  static void zero_tile(int t);
  /// tile c += tile a x tile b (bf16 pairs, fp32 accumulation).
  static void dot_tiles(int c, int a, int b);
};

}  // namespace kvflash::testing
