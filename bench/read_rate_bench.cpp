// Streaming read rate of one core and of a few, by software prefetch instruction, prefetch
// distance, page size and access pattern (not a test; docs/perf-log.md, "IFA decode read rate on
// Intel (2026-12-05, round 2)" quotes its output). The patterns copy the decode kernel's
// (src/cpu/ifa/ifa_chunk_task-inl.h, chunk_impl): S buffers (streams; 2 = K and V), cut into
// tasks of `task` bytes per stream handed to the threads in turn; a task reads its streams either
// tile by tile (`tile` bytes of stream 0, then of stream 1, ...: the kernel's K pass then V pass)
// or line by line interleaved (ilv=1). Every 64-byte line is loaded once with an AVX-512 load and
// fed to `work` FMAs (0, 4, 8 or 16; the decode's arithmetic per line is about 8 at G = 4). With a
// prefetch instruction, the line `dist` bytes ahead in the same stream is prefetched as each line
// is read, never past the task (cross=1: `dist` ahead in the order the tile passes read, so the
// K pass prefetches V and the V pass the next tile's K), and a task starts with a burst over the
// first min(dist, task) bytes of each stream (burst=0: none). Buffers are 2 MiB aligned and
// madvised to 4 KiB or 2 MiB pages; each repetition reads all of them once (mib in total): the
// default 1 GiB is far above the last-level cache, so every read is cold; a total the last-level
// cache holds (16 MiB, the least: 2 MiB a stream) times the work on data read from it instead.
// Usage: kvflash_read_rate_bench [threads=1] [mib=1024] [reps=3] [pages=4k|2m] CASE...
//   CASE: comma-separated key=value: s=2 pf=none|t0|t1|t2|nta dist=65536 tile=65536
//   task=1048576 ilv=0 work=0|4|8|16 burst=1 cross=0.
// Prints GB/s (1e9 bytes/s, median of reps) per case.
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kLine = 64;
constexpr int64_t kMaxStreams = 8;

enum class Pf { kNone, kT0, kT1, kT2, kNta };

struct Case {
  int64_t streams = 2, dist = 65536, tile = 65536, task = 1 << 20, work = 0;
  bool ilv = false, burst = true, cross = false;
  Pf pf = Pf::kT1;
  std::string text;
};

template <Pf kPf>
inline void prefetch(const char* p) {
  if constexpr (kPf == Pf::kT0) __asm__ volatile("prefetcht0 %0" : : "m"(*p));
  if constexpr (kPf == Pf::kT1) __asm__ volatile("prefetcht1 %0" : : "m"(*p));
  if constexpr (kPf == Pf::kT2) __asm__ volatile("prefetcht2 %0" : : "m"(*p));
  if constexpr (kPf == Pf::kNta) __asm__ volatile("prefetchnta %0" : : "m"(*p));
}

// The arithmetic fed by one line: `work` FMAs over eight accumulators.
struct Acc {
  __m512 f[8];
  __m512i x;
  Acc() {
    for (auto& v : f) v = _mm512_setzero_ps();
    x = _mm512_setzero_si512();
  }
  // The line's words as floats in [1, 2) (no denormal, no overflow): the FMAs never take a
  // microcode assist.
  template <int kWork>
  inline void feed(const char* p) {
    const __m512i v = _mm512_load_si512(p);
    x = _mm512_xor_si512(x, v);
    const __m512 w = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_and_si512(v, _mm512_set1_epi32(0x007fffff)), _mm512_set1_epi32(0x3f800000)));
    const __m512 c = _mm512_set1_ps(0x1p-30f);
#pragma GCC unroll 16
    for (int i = 0; i < kWork; ++i) f[i & 7] = _mm512_fmadd_ps(w, c, f[i & 7]);
  }
  uint64_t sum() const {
    __m512 a = f[0];
    for (int i = 1; i < 8; ++i) a = _mm512_add_ps(a, f[i]);
    alignas(64) uint64_t xs[8];
    alignas(64) float fs[16];
    _mm512_store_si512(xs, x);
    _mm512_store_ps(fs, a);
    uint64_t out = 0;
    for (uint64_t v : xs) out += v;
    for (float v : fs) out += static_cast<uint64_t>(v);
    return out;
  }
};

// One task: bytes [at, at + len) of each stream.
template <Pf kPf, int kWork>
void run_task(const Case& c, char* const* base, int64_t at, int64_t len, Acc& out) {
  const int64_t end = at + len;
  Acc acc = out;  // a local copy: its vectors stay in registers
  struct WriteBack {
    Acc& to;
    const Acc& from;
    ~WriteBack() { to = from; }
  } write_back{out, acc};
  if (kPf != Pf::kNone && c.burst) {
    const int64_t first = std::min(c.dist, len);
    for (int64_t s = 0; s < c.streams; ++s)
      for (int64_t o = 0; o < first; o += kLine) prefetch<kPf>(base[s] + at + o);
  }
  if (c.ilv) {
    for (int64_t o = at; o < end; o += kLine) {
      for (int64_t s = 0; s < c.streams; ++s) {
        if (kPf != Pf::kNone && o + c.dist < end) prefetch<kPf>(base[s] + o + c.dist);
        acc.feed<kWork>(base[s] + o);
      }
    }
    return;
  }
  for (int64_t t = at; t < end; t += c.tile) {
    const int64_t t_end = std::min(end, t + c.tile);
    for (int64_t s = 0; s < c.streams; ++s) {
      // cross: the pass over stream s prefetches the line `dist` ahead in the order the passes
      // read (stream s + 1 of this tile, or stream 0 of the next after the last stream).
      const bool wrap = s + 1 == c.streams;
      const char* to = c.cross ? base[wrap ? 0 : s + 1] : base[s];
      const int64_t ahead = c.dist + (c.cross && wrap ? c.tile : 0);
      for (int64_t o = t; o < t_end; o += kLine) {
        if (kPf != Pf::kNone && o + ahead < end) prefetch<kPf>(to + o + ahead);
        acc.feed<kWork>(base[s] + o);
      }
    }
  }
}

template <Pf kPf, int kWork>
uint64_t run_thread(const Case& c, char* const* base, int64_t stream_bytes, int thread,
                    int threads) {
  Acc acc;
  const int64_t tasks = (stream_bytes + c.task - 1) / c.task;
  for (int64_t k = thread; k < tasks; k += threads) {
    const int64_t at = k * c.task;
    run_task<kPf, kWork>(c, base, at, std::min(c.task, stream_bytes - at), acc);
  }
  return acc.sum();
}

template <Pf kPf>
uint64_t run_work(const Case& c, char* const* base, int64_t stream_bytes, int thread, int threads) {
  switch (c.work) {
    case 0:
      return run_thread<kPf, 0>(c, base, stream_bytes, thread, threads);
    case 4:
      return run_thread<kPf, 4>(c, base, stream_bytes, thread, threads);
    case 8:
      return run_thread<kPf, 8>(c, base, stream_bytes, thread, threads);
    default:
      return run_thread<kPf, 16>(c, base, stream_bytes, thread, threads);
  }
}

uint64_t run_one(const Case& c, char* const* base, int64_t stream_bytes, int thread, int threads) {
  switch (c.pf) {
    case Pf::kNone:
      return run_work<Pf::kNone>(c, base, stream_bytes, thread, threads);
    case Pf::kT0:
      return run_work<Pf::kT0>(c, base, stream_bytes, thread, threads);
    case Pf::kT1:
      return run_work<Pf::kT1>(c, base, stream_bytes, thread, threads);
    case Pf::kT2:
      return run_work<Pf::kT2>(c, base, stream_bytes, thread, threads);
    case Pf::kNta:
      return run_work<Pf::kNta>(c, base, stream_bytes, thread, threads);
  }
  return 0;
}

bool parse_case(const std::string& text, Case* c) {
  c->text = text;
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string kv = text.substr(at, comma - at);
    at = comma + 1;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return false;
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "pf") {
      if (v == "none")
        c->pf = Pf::kNone;
      else if (v == "t0")
        c->pf = Pf::kT0;
      else if (v == "t1")
        c->pf = Pf::kT1;
      else if (v == "t2")
        c->pf = Pf::kT2;
      else if (v == "nta")
        c->pf = Pf::kNta;
      else
        return false;
      continue;
    }
    char* rest = nullptr;
    const long long n = std::strtoll(v.c_str(), &rest, 10);
    if (rest == v.c_str() || *rest != '\0' || n < 0) return false;
    if (k == "s")
      c->streams = n;
    else if (k == "dist")
      c->dist = n;
    else if (k == "tile")
      c->tile = n;
    else if (k == "task")
      c->task = n;
    else if (k == "work")
      c->work = n;
    else if (k == "ilv")
      c->ilv = n != 0;
    else if (k == "burst")
      c->burst = n != 0;
    else if (k == "cross")
      c->cross = n != 0;
    else
      return false;
  }
  return c->streams >= 1 && c->streams <= kMaxStreams && c->tile >= kLine && c->task >= kLine &&
         c->tile % kLine == 0 && c->task % kLine == 0 && c->dist % kLine == 0 &&
         (c->work == 0 || c->work == 4 || c->work == 8 || c->work == 16);
}

long anon_huge_kib() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("AnonHugePages:", 0) == 0) return std::atol(line.c_str() + 14);
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512f")) {
    std::fprintf(stderr, "kvflash_read_rate_bench: needs AVX-512\n");
    return 2;
  }
  int threads = 1, reps = 3;
  int64_t mib = 1024;
  bool huge = false;
  std::vector<Case> cases;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("threads=", 0) == 0) {
      threads = std::atoi(a.c_str() + 8);
    } else if (a.rfind("mib=", 0) == 0) {
      mib = std::atoll(a.c_str() + 4);
    } else if (a.rfind("reps=", 0) == 0) {
      reps = std::atoi(a.c_str() + 5);
    } else if (a == "pages=2m" || a == "pages=4k") {
      huge = a == "pages=2m";
    } else {
      Case c;
      if (!parse_case(a, &c)) {
        std::fprintf(stderr, "kvflash_read_rate_bench: bad argument '%s'\n", a.c_str());
        return 2;
      }
      cases.push_back(c);
    }
  }
  if (cases.empty() || threads < 1 || reps < 1 || mib < 2 * kMaxStreams) {
    std::fprintf(stderr,
                 "usage: kvflash_read_rate_bench [threads=1] [mib=1024] [reps=3] [pages=4k|2m] "
                 "CASE...\n");
    return 2;
  }
  const int64_t total = mib << 20, page = 2 << 20;
  char* mem = static_cast<char*>(
      mmap(nullptr, total + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  char* buf = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(mem) + page - 1) & ~(page - 1));
  madvise(buf, total, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  for (int64_t o = 0; o < total; o += 8) std::memcpy(buf + o, &o, 8);
  std::printf("threads %d, %lld MiB, %s pages (AnonHugePages %ld KiB)\n", threads,
              static_cast<long long>(mib), huge ? "2 MiB" : "4 KiB", anon_huge_kib());
  uint64_t sink = 0;
  for (const Case& c : cases) {
    // Streams are equal slices of the buffer, 2 MiB aligned.
    const int64_t stream_bytes = total / c.streams / page * page;
    char* base[kMaxStreams];
    for (int64_t s = 0; s < c.streams; ++s) base[s] = buf + s * stream_bytes;
    std::vector<double> gbs;
    for (int r = 0; r < reps; ++r) {
      std::vector<std::thread> pool;
      std::vector<uint64_t> out(threads);
      const auto t0 = std::chrono::steady_clock::now();
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(t % std::max(1u, std::thread::hardware_concurrency()), &set);
          pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
          out[t] = run_one(c, base, stream_bytes, t, threads);
        });
      }
      for (auto& th : pool) th.join();
      const double sec =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (uint64_t v : out) sink += v;
      gbs.push_back(static_cast<double>(stream_bytes * c.streams) / sec / 1e9);
    }
    std::sort(gbs.begin(), gbs.end());
    std::printf("%-60s %6.2f GB/s (min %.2f max %.2f)\n", c.text.c_str(), gbs[gbs.size() / 2],
                gbs.front(), gbs.back());
    std::fflush(stdout);
  }
  munmap(mem, total + page);
  return sink == 42 ? 1 : 0;
}
