#include "bench_problem.hpp"

#include <charconv>
#include <set>
#include <string_view>

#include "cli_options.hpp"

namespace kvflash::tools {
namespace {

// A whole decimal integer in [lo, hi], or false.
bool parse_int(std::string_view s, int64_t lo, int64_t hi, int64_t* v) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && *v >= lo && *v <= hi;
}

}  // namespace

bool parse_bench_problem(const std::string& text, IfaWorkloadShape* shape, std::string* error) {
  const std::string_view all(text);
  const size_t colon = all.find(':');
  const std::string_view op = all.substr(0, colon);
  if (op != "ifa") {
    *error = "problem '" + text + "': unknown operator '" + std::string(op) +
             "' (this build benchmarks ifa:...)";
    return false;
  }
  IfaWorkloadShape s;
  s.name = text;
  int64_t batch = 8, kv_len = 4096;
  std::set<std::string, std::less<>> seen;
  std::string_view rest =
      colon == std::string_view::npos ? std::string_view() : all.substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    // Keys: letters, then either '=' and a value or the value's digits straight after.
    const size_t eq = item.find('=');
    size_t key_end = eq;
    if (eq == std::string_view::npos) {
      key_end = 0;
      while (key_end < item.size() && item[key_end] >= 'a' && item[key_end] <= 'z') ++key_end;
    }
    const std::string_view key = item.substr(0, key_end);
    const std::string_view value = item.substr(eq == std::string_view::npos ? key_end : eq + 1);
    const auto fail = [&](const char* why) {
      *error = "problem '" + text + "': " + std::string(item) + ": " + why;
      return false;
    };
    if (!seen.insert(std::string(key)).second) return fail("repeated key");
    bool ok = true;
    if (key == "b") {
      ok = parse_int(value, 1, kCliMaxBatch, &batch);
    } else if (key == "s") {
      ok = parse_int(value, 0, kCliMaxKvLen, &kv_len);
    } else if (key == "n") {
      ok = parse_int(value, 1, kCliMaxHeads, &s.num_heads);
    } else if (key == "kvn") {
      ok = parse_int(value, 1, kCliMaxHeads, &s.num_kv_heads);
    } else if (key == "d") {
      ok = parse_int(value, 1, kCliMaxHeadDim, &s.head_dim);
    } else if (key == "paged") {
      ok = parse_int(value, 0, kCliMaxBlockSize, &s.block_size);
    } else if (key == "kv") {
      if (value == "bf16") {
        s.kv_dtype = DType::kBFloat16;
      } else if (value == "fp16") {
        s.kv_dtype = DType::kFloat16;
      } else if (value == "int8") {
        s.kv_dtype = DType::kInt8;
      } else {
        return fail("kv is one of bf16, fp16, int8");
      }
    } else {
      return fail("unknown key (b, s, n, kvn, d, kv, paged)");
    }
    if (!ok) return fail("value missing, malformed or out of range");
  }
  s.lengths.assign(static_cast<size_t>(batch), kv_len);
  *shape = std::move(s);
  return true;
}

}  // namespace kvflash::tools
