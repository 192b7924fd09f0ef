// Per-ISA LightningIndexer scorers (li_kernel_{scalar,avx2,avx512}.cpp). Only li_kernel.cpp calls
// them, after checking that the CPU supports the ISA.
#pragma once

#include <cstdint>

#include "cpu/li/li_kernel.hpp"

namespace kvflash::cpu {

/// Writes the order keys (li_order_key) of the scores of keys rows[r].j0..rows[r].j1-1 of each
/// row r < count into s[r].keys[j0, j1), and the histogram of their first radix digits
/// (key >> kLiRadixShift0) into s[r].hist (the selection's first pass, for those keys); stages
/// the query row and weights into s[r].q, s[r].w first when rows[r].stage (else reads them there).
/// The rows (1..kLiRowGroup) are of one batch and share j0: every key block is read once for all
/// of them (s[0]'s key staging). A key's order key is the same bits whichever range, group, call
/// or thread scores it. The seam of li_kernel-inl.h: a matrix-engine scorer has this signature and
/// duty too.
using LiScoreRowsFn = void (*)(const LiParams& p, const LiData& d, const LiRowRef* rows,
                               const LiScratch* s, int count);

void li_score_rows_scalar(const LiParams& p, const LiData& d, const LiRowRef* rows,
                          const LiScratch* s, int count);
void li_score_rows_avx2(const LiParams& p, const LiData& d, const LiRowRef* rows,
                        const LiScratch* s, int count);
void li_score_rows_avx512(const LiParams& p, const LiData& d, const LiRowRef* rows,
                          const LiScratch* s, int count);
/// bf16 query and key only (vdpbf16ps); needs Isa::kAvx512Bf16.
void li_score_rows_avx512bf16(const LiParams& p, const LiData& d, const LiRowRef* rows,
                              const LiScratch* s, int count);

}  // namespace kvflash::cpu
