// Torch tensors as kvflash views, the library's errors as Python exceptions, and the plan cache:
// the binding layer of the PyTorch operators. It computes and validates nothing itself; the one
// check it makes is that a tensor's dtype has a kvflash DType at all.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kvflash/ifa.hpp"
#include "kvflash/sfa.hpp"
#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::torch_ext {

/// Throws c10::ValueError naming `name` when a required tensor is undefined (None from Python):
/// the kernels read the sizes and device of some tensors before the library sees the call.
void check_defined(const at::Tensor& t, const char* op, const char* name);

/// The view of a tensor, zero copy: data = t.data_ptr() (the storage offset included), offset 0,
/// t's own sizes and strides (in elements, as kvflash counts them), and its device. A dtype with no
/// kvflash DType (float64, int16, ...) is a ValueError naming `name`; ranks above kMaxRank keep
/// their rank, so the library reports them.
TensorView view_of(const at::Tensor& t, const char* op, const char* name);
std::optional<TensorView> view_of(const std::optional<at::Tensor>& t, const char* op,
                                  const char* name);

/// Throws the library's last_error_message() for a failed status: c10::ValueError (Python
/// ValueError) for kInvalid and kNullPtr, c10::Error (RuntimeError) otherwise.
[[noreturn]] void throw_status(Status status);

/// Throws c10::ValueError unless every tensor is on `device` (used by the fake kernels: a real
/// call reaches the CPU kernel only with CPU tensors).
void check_same_device(const char* op, const c10::Device& device, const at::Tensor& t,
                       const char* name);
void check_same_device(const char* op, const c10::Device& device,
                       const std::optional<at::Tensor>& t, const char* name);

/// A bounded LRU cache of plans by the library's plan fingerprint (Plan::fingerprint: equal
/// bytes mean one plan runs both argument sets), safe to use from several threads. Plans are
/// shared: one evicted while a call still runs it stays alive until that call ends.
template <class Plan, class Args>
class PlanCache {
 public:
  explicit PlanCache(size_t capacity) : capacity_(capacity) {}

  /// The plan for args' metadata: cached, or created (validated) now. Throws the library's error.
  std::shared_ptr<const Plan> get(const Args& args) {
    std::string key;
    if (const Status s = Plan::fingerprint(args, &key); s != Status::kSuccess) throw_status(s);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        ++hits_;
        return it->second->second;
      }
    }
    std::unique_ptr<Plan> created;
    const Status status = Plan::create(args, &created);
    if (status != Status::kSuccess) throw_status(status);
    std::shared_ptr<const Plan> plan(std::move(created));
    std::lock_guard<std::mutex> lock(mu_);
    ++misses_;
    auto it = index_.find(key);
    if (it != index_.end()) return it->second->second;  // another thread made it meanwhile
    lru_.emplace_front(key, plan);
    index_.emplace(std::move(key), lru_.begin());
    while (lru_.size() > capacity_) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return plan;
  }

  /// (hits, misses, cached plans) since the last clear().
  std::tuple<int64_t, int64_t, int64_t> stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {hits_, misses_, static_cast<int64_t>(lru_.size())};
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    index_.clear();
    lru_.clear();
    hits_ = misses_ = 0;
  }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const Plan>>;

  const size_t capacity_;
  std::mutex mu_;
  std::list<Entry> lru_;
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
  int64_t hits_ = 0, misses_ = 0;
};

/// Runs args on plan with a workspace from torch's allocator (on the plan's device); throws the
/// library's error.
void run_plan(const IfaPlan& plan, const IfaArgs& args, const at::Tensor& like);
void run_plan(const SfaPlan& plan, const SfaArgs& args, const at::Tensor& like);

}  // namespace kvflash::torch_ext
