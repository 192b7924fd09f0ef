// `kvflash bench` problem strings, in the spirit of oneDNN's benchdnn: one decode step per string,
//   ifa:b8,s4096,n32,kvn8,d128,kv=bf16,paged=128
// b batch, s KV length of every sequence, n query heads, kvn KV heads, d head dim, kv the cache
// dtype (bf16 | fp16 | int8), paged the block size (0 = a contiguous BNSD cache). Keys may come in
// any order; a key left out keeps the default shown above.
#pragma once

#include <string>

#include "ifa_workload.hpp"

namespace kvflash::tools {

/// Parses one problem string into *shape (name = the string). Returns false with the reason in
/// *error for an unknown operator or key, a malformed or out-of-range value (the limits of
/// cli_options.hpp), or a repeated key.
bool parse_bench_problem(const std::string& text, IfaWorkloadShape* shape, std::string* error);

}  // namespace kvflash::tools
