// Exactness by splitting: a value bf16 cannot hold is carried to the matrix engine as a sum of
// bf16 pieces, each multiplied in its own tile pass (tdpbf16ps multiplies bf16 pairs exactly and
// accumulates in fp32), never rounded to one bf16.
//
// Pieces of x (fp32): every piece but the last is x's remainder truncated to bf16 (its top 8
// significand bits), the last is the remainder rounded to nearest even. Truncation, not rounding,
// for the leading pieces: a remainder is then exact in fp32, no piece overflows (rounding FLT_MAX
// to bf16 gives inf), and each piece holds the next 8 bits, so
//   3 pieces: hi + mid + lo == x exactly (24 significand bits = 8 + 8 + 8);
//   2 pieces: |x - hi - lo| <= 2^-16 |x|;  any fp16 value (11 bits) is hi + lo exactly, and so is
//             every fp16 subnormal (>= 2^-24, a normal number in bf16);
//   1 piece:  exact for bf16 values and for int8 values (|x| <= 128 needs at most 8 bits).
// Inexact only where a remainder falls below 2^-126: the matrix engine flushes bf16 subnormal
// inputs to zero (measured: docs/perf-log.md, round 3), an absolute error below 2^-126 |q| per term.
// inf and NaN go whole into the first piece (NaN made quiet) with zero pieces after it, so they
// propagate through the tile products like the fp32 value would; -0.0 stays -0.0.
#pragma once

#include <bit>
#include <cstdint>

#include "core/half.hpp"

namespace kvflash::cpu::amx {

/// The largest number of pieces the kernels take.
inline constexpr int kMaxPieces = 3;

/// x's top 8 significand bits as bf16 (rounded toward zero); NaN quiet.
inline uint16_t bf16_truncate(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>(u >> 16);
}

/// The pieces of x (1 <= pieces <= kMaxPieces) in out[0..pieces).
inline void split_to_bf16(float x, int pieces, uint16_t* out) {
  const uint32_t a = std::bit_cast<uint32_t>(x) & 0x7fffffffu;
  if (a >= 0x7f800000u) {  // inf or NaN: whole into the first piece
    out[0] = bf16_truncate(x);
    for (int p = 1; p < pieces; ++p) out[p] = 0;
    return;
  }
  float rest = x;
  for (int p = 0; p + 1 < pieces; ++p) {
    out[p] = bf16_truncate(rest);
    rest -= core::bf16_to_float(out[p]);  // exact: the bits below the top 8
  }
  out[pieces - 1] = core::float_to_bf16(rest);
}

/// The sum the pieces stand for, in fp64 (exact: at most 3 bf16 values), for the tests.
inline double sum_of_pieces(const uint16_t* piece, int pieces) {
  double s = 0.0;
  for (int p = 0; p < pieces; ++p) s += static_cast<double>(core::bf16_to_float(piece[p]));
  return s;
}

}  // namespace kvflash::cpu::amx
