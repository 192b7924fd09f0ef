// The limits of the decode description (core::IfaProblem) that every decode kernel may rely on,
// and the split points every backend shares. IFA's validator (src/ops/ifa/ifa_validate*.cpp)
// refuses a call past them; FIA's decode front end (src/ops/fia/fia_validate_decode.cpp) routes
// such a call to the prefill kernels instead. Backends size buffers by them (cpu/ifa, cuda/ifa).
#pragma once

#include <cstdint>

namespace kvflash::core {

inline constexpr int64_t kIfaMaxHeads = 256;
inline constexpr int64_t kIfaMaxKvHeads = 256;
/// N / KV_N: stack buffers of a kernel hold one group's heads.
inline constexpr int64_t kIfaMaxGroup = 64;
inline constexpr int64_t kIfaMaxHeadDim = 512;
inline constexpr int64_t kIfaMaxBatch = 65536;
/// Tensor-list KV: B tensors at most.
inline constexpr int64_t kIfaMaxListBatch = 256;
/// Paged KV: block_size in [1, kIfaMaxBlockSize], a multiple of kIfaBlockAlignFloat (fp16 / bf16
/// caches) or kIfaBlockAlignInt8 (int8 caches).
inline constexpr int64_t kIfaMaxBlockSize = 512;
inline constexpr int64_t kIfaBlockAlignFloat = 16;
inline constexpr int64_t kIfaBlockAlignInt8 = 32;
/// A 3-D paged cache's KV_N * D (upstream's copy-stride limit).
inline constexpr int64_t kIfaMaxPagedHidden = 65535;

/// Positions per split-KV chunk, counted from a sequence's first attended position: every backend
/// splits a sequence at the same points, so its result does not depend on the batch around it and
/// the backends' roundings stay alike (docs/gpu.md).
inline constexpr int64_t kIfaChunkLen = 512;

}  // namespace kvflash::core
