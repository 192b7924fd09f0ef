// FIA kernel body: how it reads its inputs.
// Included only by fia_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// Elements of any input dtype widened exactly (fia_load, fia_widen_row), the software prefetch of
// a K/V row, the address of position j's key / value / key-rope row in the shared prefix, a
// batch's tensor or the paged cache (fia_kv_row), and the int8 K/V dequantisation while staging
// (fia_dequant_row). The layouts' address arithmetic and the dtype widening live here, so the task
// body stages rows without knowing how they are stored.

/// Element x of a fp16 / bf16 / fp32 / int8 array, widened exactly.
inline float fia_load(const void* base, DType t, int64_t x) {
  if (t == DType::kFloat32) return static_cast<const float*>(base)[x];
  if (t == DType::kInt8) return static_cast<float>(static_cast<const int8_t*>(base)[x]);
  const uint16_t h = static_cast<const uint16_t*>(base)[x];
  if (t == DType::kFloat16) return fp16_to_f32(h);
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

/// n (a multiple of kLanes) contiguous elements widened into dst.
inline void fia_widen_row(const void* base, DType t, int64_t x, float* dst, int64_t n) {
  if (t == DType::kFloat32) {
    for (int64_t i = 0; i < n; i += kLanes) vstore(dst + i, vload(static_cast<const float*>(base) + x + i));
  } else if (t == DType::kFloat16) {
    for (int64_t i = 0; i < n; i += kLanes)
      vstore(dst + i, vload_fp16(static_cast<const uint16_t*>(base) + x + i));
  } else if (t == DType::kInt8) {
    for (int64_t i = 0; i < n; i += kLanes)
      vstore(dst + i, vload_int8(static_cast<const int8_t*>(base) + x + i));
  } else {
    for (int64_t i = 0; i < n; i += kLanes)
      vstore(dst + i, vload_bf16(static_cast<const uint16_t*>(base) + x + i));
  }
}

/// Software prefetch of a row's cache lines into L2 while the tile before it is computed: K/V
/// rows of one KV head are 1-4 KB apart in BSH/BSND (and paged blocks scattered), which hardware
/// prefetchers follow poorly; without it staging V stalled on every row (perf: half the task
/// body's samples). asm volatile for the reason given at ifa_inputs-inl.h's prefetch_row (GCC
/// deletes a helper whose only effect is __builtin_prefetch).
inline void fia_prefetch_row(const void* row, int64_t bytes) {
  const auto* r = static_cast<const std::byte*>(row);
  for (int64_t o = 0; o < bytes; o += 64) __asm__ volatile("prefetcht1 %0" : : "m"(*(r + o)));
}

/// Which K/V tensor fia_kv_row addresses.
enum class FiaKv { kKey, kValue, kKeyRope };

/// Base pointer and element offset of position j's row (KV head n2) of key / value / key rope in
/// batch b: the shared prefix for j < prefix_len, then the batch's tensor (its list entry, or
/// its rows in the one tensor, or its blocks of the paged cache).
inline const void* fia_kv_row(const FiaParams& p, const FiaPointers& d, const FiaBatch& bt, int64_t b,
                              FiaKv w, int64_t n2, int64_t j, int64_t* elem) {
  if (j < p.prefix_len) {
    const bool key = w == FiaKv::kKey;
    *elem = j * (key ? p.kp_pos : p.vp_pos) + n2 * (key ? p.kp_head : p.vp_head);
    return key ? d.k_prefix : d.v_prefix;
  }
  j -= p.prefix_len;
  const void* base = w == FiaKv::kKey ? (d.k_list ? d.k_list[b] : d.k)
                     : w == FiaKv::kValue ? (d.v_list ? d.v_list[b] : d.v)
                                          : d.k_rope;
  const int64_t pos = w == FiaKv::kKey ? p.k_pos : w == FiaKv::kValue ? p.v_pos : p.kr_pos;
  const int64_t head = w == FiaKv::kKey ? p.k_head : w == FiaKv::kValue ? p.v_head : p.kr_head;
  if (p.paged) {
    const int64_t blk = d.block_table[bt.k_offset + j / p.block_size];
    const int64_t bs = w == FiaKv::kKey ? p.k_block : w == FiaKv::kValue ? p.v_block : p.kr_block;
    *elem = blk * bs + (j % p.block_size) * pos + n2 * head;
  } else {
    const int64_t off = w == FiaKv::kKey ? bt.k_offset : w == FiaKv::kValue ? bt.v_offset : bt.kr_offset;
    *elem = off + j * pos + n2 * head;
  }
  return base;
}

/// The dequantisation parameter (scale or offset) of element x of position j, KV head n2.
inline float fia_dq_param(const FiaDequant& q, const void* t, int64_t at, int64_t b, int64_t n2,
                          int64_t tok, int64_t x) {
  switch (q.mode) {
    case FiaDequant::Mode::kTensor:
      return fia_load(t, q.dtype, at);
    case FiaDequant::Mode::kChannel:
      return fia_load(t, q.dtype, at + n2 * q.chan_head + x);
    case FiaDequant::Mode::kToken:
      break;
  }
  return fia_load(t, q.dtype, at + b * q.tok_batch + tok * q.tok_pos);
}

/// Row x[0, n) of int8 K or V, dequantised in place: (x + offset) * scale, in fp32 (two roundings
/// per element, far inside the tolerance). Done while staging, so once per key tile and KV head
/// per task and shared by all the task's score rows; a decode kernel, which reads each row for
/// one query, folds the parameters into the query and the accumulator instead (IFA).
inline void fia_dequant_row(const FiaDequant& q, const void* sc, const void* of, int64_t b,
                            int64_t n2, int64_t tok, float* x, int64_t n, int64_t stride) {
  if (q.mode != FiaDequant::Mode::kChannel) {
    const float s = fia_dq_param(q, sc, q.scale_at, b, n2, tok, 0);
    const float o = q.has_offset ? fia_dq_param(q, of, q.offset_at, b, n2, tok, 0) : 0.0f;
    for (int64_t e = 0; e < n; ++e) x[e * stride] = (x[e * stride] + o) * s;
    return;
  }
  for (int64_t e = 0; e < n; ++e) {
    const float s = fia_dq_param(q, sc, q.scale_at, b, n2, tok, e);
    const float o = q.has_offset ? fia_dq_param(q, of, q.offset_at, b, n2, tok, e) : 0.0f;
    x[e * stride] = (x[e * stride] + o) * s;
  }
}
