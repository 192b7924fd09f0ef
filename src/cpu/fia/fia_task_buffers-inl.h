// FIA kernel body: a task's packed key tiles and scratch.
// Included only by fia_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// What a task's operands occupy in memory: a key tile packed ahead by the packing pass in the
// FiaPackedKv layout (fia_pack_tile_bf16, bf16 path only), and the scratch one participant holds
// (fia_task_rows, fia_slot_floats, fia_scratch_floats), which fia_task_body carves up. The driver
// sizes its buffers from these through the scalar unit's entries.

#ifdef KVFLASH_FIA_BF16_DOT
/// Key tile t of (batch b, KV head n2) packed for the bf16 path into dst, the FiaPackedKv layout:
/// its keys as fia_task_body packs them (positions past the tile 0), then, for a whole tile, its
/// values. The same rows through the same packing functions as the task's own packing, so the
/// same operands.
inline void fia_pack_tile_bf16(const FiaParams& p, const FiaPointers& d, int64_t b, int64_t n2,
                               int64_t t, uint16_t* dst) {
  const FiaBatch& bt = p.batches[b];
  const int64_t Dk = p.head_dim, Dr = p.rope_dim, Dv = p.value_dim, Bk = kFiaKeyTile;
  const int64_t j0 = t * Bk, n = std::min(Bk, bt.kv_len - j0);
  const uint16_t* krow[kFiaKeyTile];
  const uint16_t* rrow[kFiaKeyTile];
  const uint16_t* vrow[kFiaKeyTile];
  for (int64_t c = 0; c < Bk; ++c) {
    krow[c] = rrow[c] = vrow[c] = nullptr;
    if (c >= n) continue;
    int64_t kx = 0, rx = 0, vx = 0;
    krow[c] =
        static_cast<const uint16_t*>(fia_kv_row(p, d, bt, b, FiaKv::kKey, n2, j0 + c, &kx)) + kx;
    if (Dr)
      rrow[c] =
          static_cast<const uint16_t*>(fia_kv_row(p, d, bt, b, FiaKv::kKeyRope, n2, j0 + c, &rx)) +
          rx;
    vrow[c] =
        static_cast<const uint16_t*>(fia_kv_row(p, d, bt, b, FiaKv::kValue, n2, j0 + c, &vx)) + vx;
  }
  fia_pack_keys_bf16(dst, krow, rrow, Dk, Dr);
  if (n == Bk) fia_pack_values_bf16(dst + (Dk + Dr) * Bk, vrow, Dv);
}
#endif

/// Rows of a task's score and accumulator buffers: the query tile's rows x heads, rounded up to
/// whole tiles of 16 rows (the matrix engine takes rows 16 at a time; fia_tiles-inl.h).
inline int64_t fia_task_rows(int64_t G) { return (fia_query_tile(G) * G + 15) / 16 * 16; }

/// Floats of one split-KV merge slot row: max, sum, visible count, pad, acc[Dv].
inline int64_t fia_slot_floats(const FiaParams& p) { return 4 + p.value_dim; }

/// The scratch floats one participant needs.
inline int64_t fia_scratch_floats(const FiaParams& p) {
  const int64_t G = p.num_heads / p.num_kv_heads;
  const int64_t M = fia_task_rows(G), Dkt = p.head_dim + p.rope_dim, Dv = p.value_dim;
  // Q, K^T (or packed bf16 pairs), V, V packed as bf16 pairs, S, acc, softmax states (2 floats),
  // visible counts (2 floats each: int64).
  return M * Dkt + Dkt * kFiaKeyTile + kFiaKeyTile * Dv + kFiaKeyTile * Dv / 2 + M * kFiaKeyTile +
         M * Dv + 2 * M + 2 * M;
}
