// How the kvflash program times an operator call (`kvflash demo`, `kvflash ifa`, `kvflash bench`):
// the median of the timed runs and their spread (10th and 90th percentiles), each run after an
// untimed `before` step (the cache flush of DemoOptions::flush_bytes, or nothing: warm caches).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kvflash::tools {

/// The times of one call over its timed runs, in milliseconds.
struct CallTimes {
  double median_ms = 0;
  double p10_ms = 0, p90_ms = 0;  ///< 10th and 90th percentiles (nearest rank)
  int runs = 0;

  double median_seconds() const { return median_ms * 1e-3; }
};

/// The median and spread of runs timed in milliseconds.
inline CallTimes times_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const auto rank = [&](double q) {
    return ms[static_cast<size_t>(std::lround(q * static_cast<double>(ms.size() - 1)))];
  };
  return {ms[ms.size() / 2], rank(0.1), rank(0.9), static_cast<int>(ms.size())};
}

/// Milliseconds one run of fn takes.
inline double time_one(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// fn timed over `iters` runs after `warmup` untimed ones; `before`, when given, runs untimed
/// before each timed run.
inline CallTimes time_calls(int warmup, int iters, const std::function<void()>& fn,
                            const std::function<void()>& before = nullptr) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < std::max(iters, 1); ++i) {
    if (before) before();
    ms.push_back(time_one(fn));
  }
  return times_of(std::move(ms));
}

/// Two ways of making the same call (`kvflash bench --capi`: the C API path and IfaPlan::run),
/// timed alternately run by run, so that whatever else the machine does falls on both alike:
/// `warmup` untimed runs of each, then `iters` timed runs of each, `before` ahead of every one.
inline std::pair<CallTimes, CallTimes> time_alternated(
    int warmup, int iters, const std::function<void()>& a, const std::function<void()>& b,
    const std::function<void()>& before = nullptr) {
  for (int i = 0; i < warmup; ++i) a(), b();
  std::vector<double> ms_a, ms_b;
  for (int i = 0; i < std::max(iters, 1); ++i) {
    if (before) before();
    ms_a.push_back(time_one(a));
    if (before) before();
    ms_b.push_back(time_one(b));
  }
  return {times_of(std::move(ms_a)), times_of(std::move(ms_b))};
}

/// The mean of several calls' statistics (the FIA demo's decode steps: one call per step).
inline CallTimes mean_times(const std::vector<CallTimes>& calls) {
  CallTimes m;
  for (const CallTimes& c : calls) {
    m.median_ms += c.median_ms / static_cast<double>(calls.size());
    m.p10_ms += c.p10_ms / static_cast<double>(calls.size());
    m.p90_ms += c.p90_ms / static_cast<double>(calls.size());
    m.runs += c.runs;
  }
  return m;
}

/// "median 2.470 ms/call (p10-p90 2.410-2.600)" for per = "/call", with ", warm caches" inside
/// the parentheses when the runs were not preceded by a cache flush.
inline std::string describe(const CallTimes& t, bool warm, const char* per = "") {
  char buf[160];
  std::snprintf(buf, sizeof buf, "median %.3f ms%s (p10-p90 %.3f-%.3f%s)", t.median_ms, per,
                t.p10_ms, t.p90_ms, warm ? ", warm caches" : "");
  return buf;
}

}  // namespace kvflash::tools
