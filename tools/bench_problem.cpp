#include "bench_problem.hpp"

#include <charconv>
#include <set>
#include <string_view>
#include <vector>

#include "cli_options.hpp"

namespace kvflash::tools {
namespace {

// A whole decimal integer in [lo, hi], or false.
bool parse_int(std::string_view s, int64_t lo, int64_t hi, int64_t* v) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && *v >= lo && *v <= hi;
}

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Calls item(key, value, fail) for every comma-separated item after the colon; stops at the first
// false. Keys are letters, then either '=' and a value or the value's digits straight after.
template <typename F>
bool for_each_item(const std::string& text, std::string_view rest, std::string* error, F item) {
  std::set<std::string, std::less<>> seen;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view it = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = it.find('=');
    size_t key_end = eq;
    if (eq == std::string_view::npos) {
      key_end = 0;
      while (key_end < it.size() && it[key_end] >= 'a' && it[key_end] <= 'z') ++key_end;
    }
    const std::string_view key = it.substr(0, key_end);
    const std::string_view value = it.substr(eq == std::string_view::npos ? key_end : eq + 1);
    const auto fail = [&](const std::string& why) {
      *error = "problem '" + text + "': " + std::string(it) + ": " + why;
      return false;
    };
    if (!seen.insert(std::string(key)).second) return fail("repeated key");
    if (!item(key, value, fail)) return false;
  }
  return true;
}

// An integer key of a problem string: its valid range, stated by every message about it. The
// ranges are the operators' own limits (src/ifa/ifa_validate*.cpp, src/ops/sfa/sfa_validate.cpp)
// where they are narrower than the command line's (cli_options.hpp), so that a string the parser
// accepts plans.
struct IntKey {
  const char* key;
  const char* what;
  int64_t lo, hi;
  int64_t* dst;
};

std::string range_of(const IntKey& k) {
  return std::string(k.key) + " (" + k.what + ") is an integer in [" + std::to_string(k.lo) + ", " +
         std::to_string(k.hi) + "]";
}

// Every key and its range, for the unknown-key message.
template <size_t N>
std::string all_keys(const IntKey (&keys)[N], const char* others) {
  std::string out;
  for (const IntKey& k : keys) out += std::string(out.empty() ? "" : "; ") + range_of(k);
  return out + "; " + others;
}

// Parses value into the key's destination; false with the key's range in the message otherwise.
template <size_t N, typename Fail>
bool parse_int_key(const IntKey (&keys)[N], std::string_view key, std::string_view value,
                   bool* known, Fail fail) {
  for (const IntKey& k : keys) {
    if (key != k.key) continue;
    *known = true;
    if (!parse_int(value, k.lo, k.hi, k.dst)) return fail(range_of(k));
    return true;
  }
  *known = false;
  return true;
}

bool problem_error(const std::string& text, const std::string& why, std::string* error) {
  *error = "problem '" + text + "': " + why;
  return false;
}

constexpr const char* kIfaOthers =
    "kv is bf16, fp16 or int8; paged (block size) is 0 (a contiguous cache) or a multiple of 16 "
    "(32 for kv=int8) up to 512; layout is bsnd, bnsd or atb (bnsd and atb need paged > 0; atb: "
    "_npu_paged_attention's call, bf16 or fp16)";

bool parse_ifa(const std::string& text, std::string_view rest, IfaWorkloadShape* shape,
               std::string* error) {
  IfaWorkloadShape s;
  s.name = text;
  int64_t batch = 8, kv_len = 4096;
  // A KV length of 0 leaves every sequence empty (no cache block to plan with): s >= 1.
  const IntKey keys[] = {
      {"b", "batch", 1, kCliMaxBatch, &batch},
      {"s", "KV length", 1, kCliMaxKvLen, &kv_len},
      {"n", "query heads", 1, kCliMaxHeads, &s.num_heads},
      {"kvn", "KV heads, dividing n, n / kvn <= 64", 1, kCliMaxHeads, &s.num_kv_heads},
      {"d", "head dim", 1, kCliMaxHeadDim, &s.head_dim}};
  const bool ok = for_each_item(
      text, rest, error, [&](std::string_view key, std::string_view value, auto fail) {
        bool known = false;
        if (!parse_int_key(keys, key, value, &known, fail)) return false;
        if (known) return true;
        if (key == "paged") {
          if (!parse_int(value, 0, kCliMaxBlockSize, &s.block_size) || s.block_size % 16 != 0)
            return fail(
                "paged (block size) is 0 (a contiguous cache) or a multiple of 16 (32 "
                "for kv=int8) up to " +
                std::to_string(kCliMaxBlockSize));
        } else if (key == "layout") {
          if (value != "bsnd" && value != "bnsd" && value != "atb")
            return fail("layout is bsnd, bnsd or atb");
          s.paged_bnsd = value == "bnsd";
          s.paged_atb = value == "atb";
        } else if (key == "kv") {
          if (value == "bf16") {
            s.kv_dtype = DType::kBFloat16;
          } else if (value == "fp16") {
            s.kv_dtype = DType::kFloat16;
          } else if (value == "int8") {
            s.kv_dtype = DType::kInt8;
          } else {
            return fail("kv is bf16, fp16 or int8");
          }
        } else {
          return fail("unknown key (" + all_keys(keys, kIfaOthers) + ")");
        }
        return true;
      });
  if (!ok) return false;
  // The rules between keys, as the operator applies them when planning.
  if (s.num_heads % s.num_kv_heads != 0)
    return problem_error(text,
                         "n (" + std::to_string(s.num_heads) + ") must be a multiple of kvn (" +
                             std::to_string(s.num_kv_heads) + ")",
                         error);
  if (s.num_heads / s.num_kv_heads > 64)
    return problem_error(
        text, "n / kvn (" + std::to_string(s.num_heads / s.num_kv_heads) + ") must be <= 64",
        error);
  if (s.kv_dtype == DType::kInt8 && s.block_size % 32 != 0)
    return problem_error(
        text, "paged (" + std::to_string(s.block_size) + ") must be a multiple of 32 with kv=int8",
        error);
  if (s.paged_bnsd && s.block_size == 0)
    return problem_error(text, "layout=bnsd needs a paged cache (paged > 0)", error);
  if (s.paged_atb && s.block_size == 0)
    return problem_error(text, "layout=atb needs a paged cache (paged > 0)", error);
  if (s.paged_atb && s.kv_dtype == DType::kInt8)
    return problem_error(text, "layout=atb takes kv=bf16 or fp16 (_npu_paged_attention)", error);
  if (s.block_size > 0 && !s.paged_bnsd && !s.paged_atb && s.num_kv_heads * s.head_dim > 65535)
    return problem_error(text,
                         "kvn * d (" + std::to_string(s.num_kv_heads * s.head_dim) +
                             ") must be <= 65535 with layout=bsnd (a 3-D paged cache)",
                         error);
  s.lengths.assign(static_cast<size_t>(batch), kv_len);
  *shape = std::move(s);
  return true;
}

constexpr const char* kSfaOthers =
    "n (query heads) is a power of 2 in [1, 128]; blk (sparse block size) is a power of 2 in [1, "
    "128] dividing paged; paged (block size) is 0 "
    "(a contiguous cache) or a multiple of 16 up to 1024; kv is bf16 or fp16";

bool parse_sfa(const std::string& text, std::string_view rest, SfaWorkloadShape* shape,
               std::string* error) {
  SfaWorkloadShape s;
  s.name = text;
  const IntKey keys[] = {{"b", "batch", 1, kCliMaxBatch, &s.batch},
                         {"topk", "selected tokens or blocks per query", 1, kCliMaxKvLen, &s.top_k},
                         {"s", "KV length", 1, kCliMaxKvLen, &s.kv_len}};
  const bool ok = for_each_item(
      text, rest, error, [&](std::string_view key, std::string_view value, auto fail) {
        bool known = false;
        if (!parse_int_key(keys, key, value, &known, fail)) return false;
        if (known) return true;
        if (key == "n") {
          // The heads share the one latent KV head: the group size N1 / 1 is a power of 2.
          if (!parse_int(value, 1, 128, &s.num_heads) || !is_power_of_two(s.num_heads))
            return fail("n (query heads) is a power of 2 in [1, 128]");
        } else if (key == "blk") {
          if (!parse_int(value, 1, 128, &s.sparse_block_size) ||
              !is_power_of_two(s.sparse_block_size))
            return fail("blk (sparse block size) is a power of 2 in [1, 128]");
        } else if (key == "paged") {
          // The operator's own limits on a paged block size: a multiple of 16 up to 1024.
          if (!parse_int(value, 0, 1024, &s.block_size) || s.block_size % 16 != 0)
            return fail(
                "paged (block size) is 0 (a contiguous cache) or a multiple of 16 up to "
                "1024");
        } else if (key == "kv") {
          if (value == "bf16") {
            s.dtype = DType::kBFloat16;
          } else if (value == "fp16") {
            s.dtype = DType::kFloat16;
          } else {
            return fail("kv is bf16 or fp16");
          }
        } else {
          return fail("unknown key (" + all_keys(keys, kSfaOthers) + ")");
        }
        return true;
      });
  if (!ok) return false;
  if (s.block_size > 0 && s.block_size % s.sparse_block_size != 0)
    return problem_error(text, "blk must divide the paged block size", error);
  *shape = std::move(s);
  return true;
}

constexpr const char* kFiaOthers =
    "mode is 0 (no mask) or 3 (causal); mask (mode 3's compressed mask) is 2d, 3d, 4d or none "
    "(none: only a decode call, q1, takes it); paged (block size, fia only) is 0 (a contiguous "
    "cache) or a multiple of 16 up to 512; kv is bf16, fp16, int8 (per-channel) or int8t "
    "(per-token; fia only); layout is bsnd or tnd (fia only); lse and sink are 0 or 1 (fia only); "
    "q and s also take per-request lists LEN[xCOUNT]+... (fia only: a TND call over a paged "
    "cache)";

// A per-request list "LEN[xCOUNT]+LEN[xCOUNT]...", each LEN in [lo, hi], at most kCliMaxBatch
// entries in all.
bool parse_lengths(std::string_view v, int64_t lo, int64_t hi, std::vector<int64_t>* out) {
  out->clear();
  while (true) {
    const size_t plus = v.find('+');
    const std::string_view term = v.substr(0, plus);
    const size_t x = term.find('x');
    int64_t len = 0, count = 1;
    if (!parse_int(term.substr(0, x), lo, hi, &len)) return false;
    if (x != std::string_view::npos && !parse_int(term.substr(x + 1), 1, kCliMaxBatch, &count))
      return false;
    if (static_cast<int64_t>(out->size()) + count > kCliMaxBatch) return false;
    out->insert(out->end(), static_cast<size_t>(count), len);
    if (plus == std::string_view::npos) return true;
    v = v.substr(plus + 1);
  }
}

bool is_list(std::string_view v) {
  return v.find('x') != std::string_view::npos || v.find('+') != std::string_view::npos;
}

// fia: / pfa: (prompt) problem strings: one prefill step (q query rows over s keys per sequence).
bool parse_fia(const std::string& text, std::string_view rest, bool prompt, FiaWorkloadShape* shape,
               std::string* error) {
  FiaWorkloadShape s;
  s.name = text;
  s.prompt = prompt;
  // The operator's limits: value (= query) head dim a multiple of 16 up to 512.
  const IntKey keys[] = {{"b", "batch", 1, kCliMaxBatch, &s.batch},
                         {"q", "query rows per sequence", 1, kCliMaxKvLen, &s.q_len},
                         {"s", "KV length (0 = q)", 0, kCliMaxKvLen, &s.kv_len},
                         {"n", "query heads", 1, kCliMaxHeads, &s.num_heads},
                         {"kvn", "KV heads, dividing n", 1, kCliMaxHeads, &s.num_kv_heads},
                         {"d", "head dim, a multiple of 16", 16, kCliMaxHeadDim, &s.head_dim}};
  const bool ok = for_each_item(
      text, rest, error, [&](std::string_view key, std::string_view value, auto fail) {
        if ((key == "q" || key == "s") && is_list(value)) {
          if (prompt) return fail("pfa takes one length per sequence");
          std::vector<int64_t>& l = key == "q" ? s.q_lens : s.kv_lens;
          if (!parse_lengths(value, key == "q" ? 1 : 0, kCliMaxKvLen, &l))
            return fail(std::string(key) + " is a length or a list LEN[xCOUNT]+... of at most " +
                        std::to_string(kCliMaxBatch) + " lengths in [" + (key == "q" ? "1" : "0") +
                        ", " + std::to_string(kCliMaxKvLen) + "]");
          return true;
        }
        bool known = false;
        if (!parse_int_key(keys, key, value, &known, fail)) return false;
        if (known) return true;
        int64_t flag = 0;
        if (key == "mode") {
          if (!parse_int(value, 0, 3, &s.sparse_mode) || (s.sparse_mode != 0 && s.sparse_mode != 3))
            return fail("mode is 0 (no mask) or 3 (causal)");
        } else if (key == "mask") {
          if (value != "2d" && value != "3d" && value != "4d" && value != "none")
            return fail("mask is 2d, 3d, 4d (the compressed mask's shape) or none");
          s.mask_rank = value == "none" ? 0 : value[0] - '0';
        } else if (key == "layout") {
          if (prompt || (value != "bsnd" && value != "tnd"))
            return fail("layout is bsnd or tnd (fia)");
          s.tnd = value == "tnd";
        } else if (key == "lse" || key == "sink") {
          if (prompt || !parse_int(value, 0, 1, &flag))
            return fail(std::string(key) + " is 0 or 1 (fia)");
          (key == "lse" ? s.lse : s.sink) = flag == 1;
        } else if (key == "paged") {
          if (prompt) return fail("pfa has no paged cache (PromptFlashAttention)");
          if (!parse_int(value, 0, kCliMaxBlockSize, &s.block_size) || s.block_size % 16 != 0)
            return fail("paged (block size) is 0 (a contiguous cache) or a multiple of 16 up to " +
                        std::to_string(kCliMaxBlockSize));
        } else if (key == "kv") {
          if (value == "bf16") {
            s.dtype = DType::kBFloat16;
          } else if (value == "fp16") {
            s.dtype = DType::kFloat16;
          } else if (value == "int8" || (value == "int8t" && !prompt)) {
            s.kv_int8 = value == "int8" ? 1 : 2;  // query and output stay bf16
          } else {
            return fail("kv is bf16, fp16, int8 or int8t (fia)");
          }
        } else {
          return fail("unknown key (" + all_keys(keys, kFiaOthers) + ")");
        }
        return true;
      });
  if (!ok) return false;
  if (s.num_heads % s.num_kv_heads != 0)
    return problem_error(text,
                         "n (" + std::to_string(s.num_heads) + ") must be a multiple of kvn (" +
                             std::to_string(s.num_kv_heads) + ")",
                         error);
  if (s.head_dim % 16 != 0) return problem_error(text, "d must be a multiple of 16", error);
  // Per-request lists make a TND call over a paged cache; s broadcasts, or has one per request.
  if (!s.q_lens.empty() || !s.kv_lens.empty()) {
    s.tnd = true;
    if (s.q_lens.empty()) s.q_lens.assign(s.kv_lens.size(), s.q_len);
    if (s.kv_lens.empty()) s.kv_lens.assign(s.q_lens.size(), s.kv());
    if (s.kv_lens.size() != s.q_lens.size())
      return problem_error(text,
                           "s lists " + std::to_string(s.kv_lens.size()) + " requests, q " +
                               std::to_string(s.q_lens.size()),
                           error);
    for (size_t r = 0; r < s.q_lens.size(); ++r)
      if (s.kv_lens[r] == 0) s.kv_lens[r] = s.q_lens[r];  // s0 = q: a prompt
    s.batch = static_cast<int64_t>(s.q_lens.size());
  }
  // D4: only FIA's decode branch (a BSND query of one row) needs no mask with mode 3.
  if (s.sparse_mode == 3 && s.mask_rank == 0 && (prompt || s.tnd || s.q_len != 1))
    return problem_error(text,
                         "mask=none with mode=3 needs a decode call (fia, q1, no per-request "
                         "lists: the decode branch ignores the sparse mode); a prefill call "
                         "takes the compressed mask",
                         error);
  if (s.tnd && s.block_size == 0)
    return problem_error(text, "a TND call (layout=tnd or per-request lists) needs paged > 0",
                         error);
  if (s.kv_int8 != 0 && s.block_size % 32 != 0 && s.block_size != 0)
    return problem_error(text, "paged must be a multiple of 32 with kv=int8", error);
  *shape = std::move(s);
  return true;
}

constexpr const char* kLiOthers =
    "topk (sparse_count) is in [1, 2048] or a multiple of 1024 up to 8192; paged (block size) is "
    "a multiple of 16 in [16, 1024]; kv is bf16 or fp16";

bool parse_li(const std::string& text, std::string_view rest, LiWorkloadShape* shape,
              std::string* error) {
  LiWorkloadShape s;
  s.name = text;
  const IntKey keys[] = {{"b", "requests", 1, kCliMaxBatch, &s.batch},
                         {"s", "cached tokens", 1, kCliMaxKvLen, &s.kv_len},
                         {"n", "indexer heads", 1, 64, &s.num_heads},
                         {"next", "query rows per request", 1, 4, &s.next_n}};
  const bool ok = for_each_item(
      text, rest, error, [&](std::string_view key, std::string_view value, auto fail) {
        bool known = false;
        if (!parse_int_key(keys, key, value, &known, fail)) return false;
        if (known) return true;
        if (key == "topk") {
          // The operator's sparse_count rule (src/ops/li/li_validate.cpp).
          if (!parse_int(value, 1, 8192, &s.top_k) || (s.top_k > 2048 && s.top_k % 1024 != 0))
            return fail("topk (sparse_count) is in [1, 2048] or a multiple of 1024 up to 8192");
        } else if (key == "paged") {
          if (!parse_int(value, 16, 1024, &s.block_size) || s.block_size % 16 != 0)
            return fail("paged (block size) is a multiple of 16 in [16, 1024]");
        } else if (key == "kv") {
          if (value == "bf16") {
            s.dtype = DType::kBFloat16;
          } else if (value == "fp16") {
            s.dtype = DType::kFloat16;
          } else {
            return fail("kv is bf16 or fp16");
          }
        } else {
          return fail("unknown key (" + all_keys(keys, kLiOthers) + ")");
        }
        return true;
      });
  if (!ok) return false;
  *shape = std::move(s);
  return true;
}

constexpr const char* kKvCacheOthers =
    "kv is bf16, fp16 or int8; slots is prefill (requests of 1024 tokens in consecutive slots) or "
    "decode (one token per request, each in its own block)";

bool parse_kv_cache(const std::string& text, std::string_view rest, KvCacheWorkloadShape* shape,
                    std::string* error) {
  KvCacheWorkloadShape s;
  s.name = text;
  const IntKey keys[] = {{"t", "tokens written", 1, kCliMaxKvLen, &s.tokens},
                         {"kvn", "KV heads", 1, kCliMaxHeads, &s.num_kv_heads},
                         // the write has no head-dim limit: 4096 bounds the test data
                         {"d", "head dim", 1, 4096, &s.head_dim},
                         {"paged", "block size", 1, kCliMaxBlockSize, &s.block_size}};
  const bool ok = for_each_item(
      text, rest, error, [&](std::string_view key, std::string_view value, auto fail) {
        bool known = false;
        if (!parse_int_key(keys, key, value, &known, fail)) return false;
        if (known) return true;
        if (key == "slots") {
          if (value != "prefill" && value != "decode") return fail("slots is prefill or decode");
          s.decode = value == "decode";
        } else if (key == "kv") {
          if (value == "bf16") {
            s.dtype = DType::kBFloat16;
          } else if (value == "fp16") {
            s.dtype = DType::kFloat16;
          } else if (value == "int8") {
            s.dtype = DType::kInt8;
          } else {
            return fail("kv is bf16, fp16 or int8");
          }
        } else {
          return fail("unknown key (" + all_keys(keys, kKvCacheOthers) + ")");
        }
        return true;
      });
  if (!ok) return false;
  *shape = std::move(s);
  return true;
}

// The operators a problem string may name: its prefix, the shape it fills and its parser. The
// unknown-operator message lists them.
struct BenchOpParser {
  const char* prefix;
  BenchOp op;
  bool (*parse)(const std::string& text, std::string_view rest, BenchProblem* p,
                std::string* error);
};
constexpr BenchOpParser kBenchOps[] = {
    {"ifa", BenchOp::kIfa,
     [](const std::string& t, std::string_view r, BenchProblem* p, std::string* e) {
       return parse_ifa(t, r, &p->ifa, e);
     }},
    {"sfa", BenchOp::kSfa,
     [](const std::string& t, std::string_view r, BenchProblem* p, std::string* e) {
       return parse_sfa(t, r, &p->sfa, e);
     }},
    {"li", BenchOp::kLi,
     [](const std::string& t, std::string_view r, BenchProblem* p, std::string* e) {
       return parse_li(t, r, &p->li, e);
     }},
    {"fia", BenchOp::kFia,
     [](const std::string& t, std::string_view r, BenchProblem* p, std::string* e) {
       return parse_fia(t, r, /*prompt=*/false, &p->fia, e);
     }},
    {"pfa", BenchOp::kFia,
     [](const std::string& t, std::string_view r, BenchProblem* p, std::string* e) {
       return parse_fia(t, r, /*prompt=*/true, &p->fia, e);
     }},
    {"kvcache", BenchOp::kKvCache,
     [](const std::string& t, std::string_view r, BenchProblem* p, std::string* e) {
       return parse_kv_cache(t, r, &p->kv_cache, e);
     }},
};

}  // namespace

bool parse_bench_problem(const std::string& text, BenchProblem* problem, std::string* error) {
  const std::string_view all(text);
  const size_t colon = all.find(':');
  const std::string_view op = all.substr(0, colon);
  const std::string_view rest =
      colon == std::string_view::npos ? std::string_view() : all.substr(colon + 1);
  BenchProblem p;
  p.name = text;
  std::string known;
  for (const BenchOpParser& entry : kBenchOps) {
    if (op == entry.prefix) {
      p.op = entry.op;
      if (!entry.parse(text, rest, &p, error)) return false;
      *problem = std::move(p);
      return true;
    }
    known += std::string(known.empty()                       ? ""
                         : &entry == std::end(kBenchOps) - 1 ? " or "
                                                             : ", ") +
             entry.prefix + ":...";
  }
  *error = "problem '" + text + "': unknown operator '" + std::string(op) + "' (" + known + ")";
  return false;
}

bool bench_sweep(const std::string& name, std::vector<std::string>* problems, std::string* error) {
  std::vector<std::string> out;
  if (name == "quick") {
    out = {"ifa:b2,s64,n4,kvn2,d64,kv=fp16,paged=32", "ifa:b2,s64,n4,kvn2,d64,kv=bf16,paged=0",
           "ifa:b1,s16,n4,kvn2,d64,kv=int8,paged=32,layout=bnsd",
           "sfa:b1,topk64,s256,n16,blk1,paged=64,kv=bf16"};
  } else if (name == "default") {
    // The shapes of the round-2 issue (docs/perf-log.md), sized so that the whole sweep with its
    // peers (bench/peers.py) runs in about 10 minutes on 2 cores. Llama-3-8B attention is the
    // default shape (n32, kvn8, d128); Qwen2.5-7B is n28, kvn4, d128.
    for (const char* kv : {"bf16", "fp16", "int8"})  // GB/s against KV length, per dtype
      for (const char* s : {"1024", "4096", "8192", "16384", "32768"})
        out.push_back(std::string("ifa:b2,s") + s + ",kv=" + kv + ",paged=128");
    for (const char* kv : {"bf16", "fp16", "int8"})  // contiguous cache
      out.push_back(std::string("ifa:b2,s8192,kv=") + kv + ",paged=0");
    for (const char* bs : {"16", "128", "512"})  // paged block sizes, both cache layouts
      for (const char* layout : {"bsnd", "bnsd"})
        if (std::string(bs) != "128" || std::string(layout) != "bsnd")  // in the series above
          out.push_back(std::string("ifa:b2,s8192,kv=bf16,paged=") + bs + ",layout=" + layout);
    for (const char* s : {"4096", "16384"})  // Qwen2.5-7B
      out.push_back(std::string("ifa:b2,s") + s + ",n28,kvn4,kv=bf16,paged=128");
    out.push_back("ifa:b2,s16384,n28,kvn4,kv=int8,paged=128");
    for (const char* kvn : {"32", "16", "4"})  // GQA groups 1, 2, 8 (4 is the default shape)
      out.push_back(std::string("ifa:b2,s4096,n32,kvn") + kvn + ",kv=bf16,paged=128");
    for (const char* d : {"64", "256"})  // head dims (128 is the default shape)
      out.push_back(std::string("ifa:b2,s4096,d") + d + ",kv=bf16,paged=128");
    out.push_back("ifa:b1,s1024,kv=bf16,paged=128");  // small problems
    out.push_back("ifa:b64,s512,kv=bf16,paged=128");
    out.push_back("ifa:b1,s16,kv=bf16,paged=128");                      // the fixed per-call cost
    out.push_back("sfa:b4,topk2048,s8192,n128,blk1,paged=64,kv=bf16");  // DeepSeek-V3.2 MLA
    out.push_back("sfa:b4,topk2048,s8192,n16,blk1,paged=64,kv=bf16");   // a 16-head shard
    out.push_back("sfa:b4,topk2048,s8192,n128,blk1,paged=64,kv=fp16");
  } else if (name == "vllm") {
    // vllm-ascend's attention path (docs/perf-log.md "vllm-ascend's attention path"): ATB's paged
    // decode against IFA's own paged call on the same bytes (the atb rows should match the bsnd
    // rows), and the cache write at memory speed (GB/s against the read bandwidth).
    for (const char* kv : {"bf16", "fp16"})
      for (const char* layout : {"bsnd", "atb"})
        for (const char* shape : {"b8,s4096", "b32,s1024", "b1,s16384"})
          out.push_back(std::string("ifa:") + shape + ",kv=" + kv + ",paged=128,layout=" + layout);
    // Prefill writes chunks of up to 1024 tokens; a decode step writes one token per request,
    // each into its own block, so T is the batch (a decode batch of 16k requests would also need
    // 16k blocks: 4 GiB per cache at these shapes).
    for (const char* t : {"256", "4096", "16384"})
      out.push_back(std::string("kvcache:t") + t + ",kvn8,d128,paged=128,kv=bf16,slots=prefill");
    for (const char* t : {"32", "256", "1024"})
      out.push_back(std::string("kvcache:t") + t + ",kvn8,d128,paged=128,kv=bf16,slots=decode");
    out.push_back("kvcache:t4096,kvn1,d576,paged=128,kv=bf16,slots=prefill");  // an MLA-sized row
  } else {
    *error = "unknown sweep '" + name + "' (default, quick, vllm)";
    return false;
  }
  problems->insert(problems->end(), out.begin(), out.end());
  return true;
}

}  // namespace kvflash::tools
