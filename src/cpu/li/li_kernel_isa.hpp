// Per-ISA LightningIndexer scorers (li_kernel_{scalar,avx2,avx512}.cpp). Only li_kernel.cpp calls
// them, after checking that the CPU supports the ISA.
#pragma once

#include <cstdint>

#include "cpu/li/li_kernel.hpp"

namespace kvflash::cpu {

/// Writes the order keys (li_order_key) of the scores of keys rr.j0..rr.j1-1 of row rr into
/// keys[rr.j0, rr.j1), and the histogram of their first radix digits (key >> kLiRadixShift0) into
/// s.hist (the selection's first pass, for those keys), using the scratch s; stages the query row
/// and weights into s.q, s.w first when rr.stage (else reads them there). A key's order key is
/// the same bits whichever range, call or thread scores it. The seam of li_kernel-inl.h: a
/// matrix-engine scorer has this signature and duty too.
using LiScoreRowFn = void (*)(const LiParams& p, const LiData& d, const LiRowRef& rr,
                              const LiScratch& s, uint32_t* keys);

void li_score_row_scalar(const LiParams& p, const LiData& d, const LiRowRef& rr, const LiScratch& s,
                         uint32_t* keys);
void li_score_row_avx2(const LiParams& p, const LiData& d, const LiRowRef& rr, const LiScratch& s,
                       uint32_t* keys);
void li_score_row_avx512(const LiParams& p, const LiData& d, const LiRowRef& rr, const LiScratch& s,
                         uint32_t* keys);
/// bf16 query and key only (vdpbf16ps); needs Isa::kAvx512Bf16.
void li_score_row_avx512bf16(const LiParams& p, const LiData& d, const LiRowRef& rr,
                             const LiScratch& s, uint32_t* keys);

}  // namespace kvflash::cpu
