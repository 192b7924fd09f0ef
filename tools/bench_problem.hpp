// `kvflash bench` problem strings, in the spirit of oneDNN's benchdnn: one decode step per string.
//   ifa:b8,s4096,n32,kvn8,d128,kv=bf16,paged=128,layout=bsnd
// b batch, s KV length of every sequence, n query heads, kvn KV heads, d head dim, kv the cache
// dtype (bf16 | fp16 | int8), paged the block size (0 = a contiguous BNSD cache), layout the paged
// cache's layout (bsnd = (blocks, block_size, KV_N*D), bnsd = (blocks, KV_N, block_size, D)).
//   sfa:b4,topk2048,s8192,n128,blk1,paged=64,kv=bf16
// b batch, topk selected tokens (or blocks) per query, s KV length of every sequence, n query
// heads (a power of 2 up to 128, sharing the one latent KV head of 512 + 64 rope dims), blk the
// sparse block size (a power of 2 up to 128 that divides paged), paged the block size (0 = a
// contiguous BSND cache), kv the dtype of query, cache and output (bf16 | fp16). Keys may come in
// any order; a key left out keeps the default shown above.
//   li:b4,s32768,n64,topk2048,next1,paged=128,kv=bf16
// the lightning indexer (DeepSeek-V3.2's): b requests, s cached tokens of every request, n
// indexer heads (1..64, D = 128), topk sparse_count, next the query rows per request (MTP), paged
// the cache block size, kv the dtype of query, key and weights (bf16 | fp16).
//   fia:b1,q2048,s0,n32,kvn8,d128,mode=3,paged=0,kv=bf16   (pfa: the same keys but paged)
// b batch, q query rows and s KV length of every sequence (s0 = q: a prompt), n / kvn heads, d
// head dim (a multiple of 16), mode 0 (no mask) or 3 (causal), paged the block size of a BnBsH
// cache (fia only; 0 = contiguous BSND), kv bf16 | fp16 | int8 (per-channel split scales) |
// int8t (fia: per-token scales); pfa runs PromptFlashAttention. fia also takes lse=0|1, sink=0|1,
// layout=bsnd|tnd and per-request lengths (a TND call over a paged cache):
//   fia:q1x8+2048,s8192x8+10240,n32,kvn8,d128,mode=3,paged=128
// (8 decode requests over 8192 positions and a 2048-row chunk over 10240).
//   ifa:b8,s4096,paged=128,layout=atb
// IFA as _npu_paged_attention calls it (ATB PagedAttention, vllm-ascend's decode): the cache
// (blocks, block_size, KV_N, D) read through its heads-first view, bf16 or fp16.
//   kvcache:t4096,kvn8,d128,paged=128,kv=bf16,slots=prefill
// the cache write (ScatterPaKvCache: _npu_reshape_and_cache, npu_scatter_pa_kv_cache) of t
// tokens' key and value rows (KV_N = kvn, D = d, dtype kv: bf16 | fp16 | int8) into a paged ND
// cache of block size paged; slots prefill (requests of 1024 consecutive slots) or decode (one
// token per request, each in its own block). Named sweeps expand to lists of such strings
// (bench_sweep).
#pragma once

#include <string>
#include <vector>

#include "bench_fia.hpp"
#include "bench_sfa.hpp"
#include "ifa_workload.hpp"
#include "kv_cache_workload.hpp"
#include "li_workload.hpp"

namespace kvflash::tools {

enum class BenchOp { kIfa, kSfa, kLi, kFia, kKvCache };

/// One parsed problem string: op selects which shape is meaningful.
struct BenchProblem {
  std::string name;  ///< the string as given
  BenchOp op = BenchOp::kIfa;
  IfaWorkloadShape ifa;
  SfaWorkloadShape sfa;
  LiWorkloadShape li;
  FiaWorkloadShape fia;
  KvCacheWorkloadShape kv_cache;
};

/// Parses one problem string into *problem. Returns false with the reason in *error for an
/// unknown operator or key (the message lists every key's range), a malformed or out-of-range
/// value (the message states the key's range: the limits of cli_options.hpp, narrowed to what the
/// operator plans: ifa s >= 1, kvn dividing n with n / kvn <= 64, paged a multiple of 16 (32 for
/// int8); sfa n a power of 2 <= 128, blk a power of 2 <= 128 dividing paged), or a repeated key.
bool parse_bench_problem(const std::string& text, BenchProblem* problem, std::string* error);

/// The problem strings of a named sweep ("default": the shapes of docs/perf-log.md; "quick": a
/// few small ones for smoke tests; "vllm": vllm-ascend's paged decode and cache write). Returns
/// false with the known names in *error for another name.
bool bench_sweep(const std::string& name, std::vector<std::string>* problems, std::string* error);

}  // namespace kvflash::tools
