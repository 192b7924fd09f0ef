#include "mutate.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace kvflash::fuzz {
namespace {

bool is_float(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat32;
}

double draw(Role role, DType dtype, testing::TestRng& rng) {
  switch (role) {
    case Role::kData:
      if (dtype == DType::kInt8) return std::round(rng.uniform(-127.0, 127.0));
      if (!is_float(dtype)) return static_cast<double>(rng.below(5)) - 1;
      return rng.normal();
    case Role::kAqScale:
      return rng.uniform(0.005, 0.03);
    case Role::kAqOffset:
      return rng.uniform(-8.0, 8.0);
    case Role::kQuantScale:
      return rng.uniform(20.0, 70.0);
    case Role::kQuantOffset:
      return rng.uniform(-6.0, 6.0);
    case Role::kMask:
      return rng.unit() < 0.25 ? 1.0 : 0.0;
    case Role::kIds:
      return static_cast<double>(rng.below(42)) - 2;
    case Role::kLengths:
      return static_cast<double>(rng.below(41));
    case Role::kPadding:
      return static_cast<double>(rng.below(11));
    case Role::kSink:
      return rng.normal() * 2.0;
    case Role::kScalar:
      return 1.0;
    case Role::kOutput:
      return 0.0;
  }
  return 0.0;
}

}  // namespace

void fill_view(const TensorView& v, Role role, testing::TestRng& rng) {
  const int64_t n = v.numel();
  for (int64_t i = 0; i < n; ++i) store_element_flat(v, i, draw(role, v.dtype, rng));
}

void CaseMemory::rehome(const Slot& slot, testing::TestRng& rng) {
  TensorView& v = *slot.view;
  if (v.data == nullptr) return;  // a null stays null: the library must say so
  const auto bytes = view_bytes(v);
  if (!bytes || *bytes > kMaxBytes) {
    v.data = unreadable_page();
    unbacked = true;
    unbacked_names.push_back(slot.name);
    return;
  }
  inputs_.push_back(std::make_unique<Guarded>(static_cast<size_t>(*bytes), 0, 0xFF));
  v.data = inputs_.back()->data();
  // Fill the whole buffer (gaps included) element by element: a view with zero strides may have
  // far more elements than bytes.
  const int64_t es = static_cast<int64_t>(dtype_size(v.dtype));
  if (slot.role != Role::kOutput && es > 0) {
    const int64_t n = static_cast<int64_t>(*bytes) / es;
    fill_view(TensorView::contiguous(v.data, v.dtype, {n}), slot.role, rng);
  }
}

TensorView CaseMemory::make(DType dtype, std::vector<int64_t> shape, Role role,
                            testing::TestRng& rng) {
  TensorView v = TensorView::contiguous(nullptr, dtype, shape);
  const auto bytes = view_bytes(v);
  inputs_.push_back(std::make_unique<Guarded>(static_cast<size_t>(bytes ? *bytes : 0), 0, 0));
  v.data = inputs_.back()->data();
  fill_view(v, role, rng);
  return v;
}

void CaseMemory::guard_output(const Slot& slot, size_t misalign) {
  TensorView& v = *slot.view;
  if (v.data == nullptr || v.data == unreadable_page()) return;
  const auto bytes = view_bytes(v);
  if (!bytes || *bytes > kMaxBytes) {
    v.data = unreadable_page();
    unbacked = true;
    unbacked_names.push_back(slot.name);
    return;
  }
  Out o;
  o.view = &v;
  o.buf.mem = std::make_unique<Guarded>(static_cast<size_t>(*bytes), misalign, 0xFF);
  o.buf.name = slot.name;
  v.data = o.buf.mem->data();
  outputs_.push_back(std::move(o));
}

void CaseMemory::snapshot(const std::vector<Slot>& slots) {
  unchanged_ = Unchanged();
  for (const Slot& s : slots) {
    if (s.output || s.view->data == nullptr || s.view->data == unreadable_page()) continue;
    const auto bytes = view_bytes(*s.view);
    if (bytes && *bytes <= kMaxBytes * 4)
      unchanged_.add(s.view->data, static_cast<size_t>(*bytes), s.name);
  }
  resnapshot_outputs();
}

void CaseMemory::resnapshot_outputs() {
  for (Out& o : outputs_) {
    o.buf.before.assign(o.buf.mem->data(), o.buf.mem->data() + o.buf.mem->size());
  }
}

void CaseMemory::check_after(const std::vector<Slot>& slots, bool written,
                             const std::string& when) const {
  unchanged_.check(when);
  for (const Out& o : outputs_) {
    // An output view that no longer points at its buffer was replaced by a mutation after
    // guarding: nothing may be written to the buffer then.
    const bool mine = o.view->data == o.buf.mem->data();
    const bool forbidden =
        std::find(forbidden_.begin(), forbidden_.end(), o.view) != forbidden_.end();
    o.buf.check(*o.view, written && mine && !forbidden);
  }
  for (const auto& g : inputs_) g->check_guards(when + ": an input");
  (void)slots;
}

DType any_dtype(FuzzInput& in) {
  static constexpr int32_t kValues[] = {0, 1, 2, 3,  4,  9,  12, 27, 5,
                                        6, 7, 8, 10, 11, 13, 29, -1, 99};
  return static_cast<DType>(kValues[in.below(sizeof(kValues) / sizeof(kValues[0]))]);
}

std::string mutate_view(FuzzInput& in, const Slot& slot, CaseMemory& mem, testing::TestRng& rng) {
  TensorView& v = *slot.view;
  const int field = in.below(9);
  const int rank = std::clamp(v.rank, 0, kMaxRank);  // a previous mutation may have broken it
  const int k = rank > 0 ? static_cast<int>(in.below(static_cast<uint32_t>(rank))) : 0;
  std::string what = slot.name + ".";
  bool geometry = true;
  switch (field) {
    case 0:  // a dim: nearby value
    case 1:  // a dim: anything
      if (rank == 0) return what + "nothing";
      v.shape[k] = field == 0 ? std::max<int64_t>(0, sat_add(v.shape[k], in.in(-2, 2)))
                              : in.special(v.shape[k]);
      // Huge dims usually come with stride 0, as engines broadcast them; else nothing is backed.
      if (field == 1 && v.shape[k] > 4096 && in.flag()) v.strides[k] = 0;
      what += "dim" + std::to_string(k) + "=" + std::to_string(v.shape[k]);
      break;
    case 2:  // a stride
      if (rank == 0) return what + "nothing";
      if (in.flag()) {
        int64_t x;
        if (__builtin_mul_overflow(in.in(0, 3), v.strides[k], &x) ||
            __builtin_add_overflow(x, in.in(0, 2), &x))
          x = std::numeric_limits<int64_t>::max();
        v.strides[k] = x;
      } else {
        v.strides[k] = in.special(v.strides[k]);
      }
      what += "stride" + std::to_string(k) + "=" + std::to_string(v.strides[k]);
      break;
    case 3:  // the offset
      v.offset = in.flag() ? in.in(0, 7) : in.special(v.offset);
      what += "offset=" + std::to_string(v.offset);
      break;
    case 4: {  // the rank
      const int64_t r64 = in.flag() ? sat_add(v.rank, in.in(-1, 1)) : in.special(v.rank);
      const int r = static_cast<int>(std::clamp<int64_t>(r64, -1000, 1000));
      if (r >= 0 && r <= kMaxRank) {
        for (int i = rank; i < r; ++i) {
          v.shape[i] = 1;
          v.strides[i] = 1;
        }
      }
      v.rank = r;
      what += "rank=" + std::to_string(r);
      if (r < 0 || r > kMaxRank) {
        // Not a view at all: the library must reject it before reading any field.
        v.data = unreadable_page();
        mem.unbacked = true;
        mem.unbacked_names.push_back(slot.name);
        return what;
      }
      break;
    }
    case 5:  // the dtype
      v.dtype = any_dtype(in);
      what += "dtype=" + std::to_string(static_cast<int>(v.dtype));
      break;
    case 6:  // no data
      v.data = nullptr;
      what += "data=null";
      geometry = false;
      break;
    case 7:  // another device
      v.device = Device{DeviceType::kCuda, static_cast<int32_t>(in.below(2))};
      what += "device=" + device_name(v.device);
      geometry = false;
      break;
    default: {  // a contiguous view of a new shape of the same rank
      if (rank == 0) return what + "nothing";
      v.shape[k] = in.in(0, 6);
      int64_t stride = 1;
      for (int i = rank - 1; i >= 0; --i) {
        v.strides[i] = stride;
        stride = sat_mul(stride, std::max<int64_t>(v.shape[i], 1));
      }
      v.offset = 0;
      what += "reshape dim" + std::to_string(k) + "=" + std::to_string(v.shape[k]);
      break;
    }
  }
  if (geometry) {
    if (slot.output)
      mem.guard_output(slot, 0);
    else
      mem.rehome(slot, rng);
  }
  return what;
}

std::string inject_nonfinite(FuzzInput& in, const Slot& slot) {
  TensorView& v = *slot.view;
  const auto bytes = view_bytes(v);
  if (!bytes || v.data == nullptr || v.data == unreadable_page() || !is_float(v.dtype)) return "";
  const int64_t n = safe_numel(v);
  if (n <= 0) return "";
  const int64_t at =
      static_cast<int64_t>(in.below(static_cast<uint32_t>(std::min<int64_t>(n, 1 << 20))));
  const int kind = slot.inf_ok ? in.below(3) : 0;
  const double x = kind == 0   ? std::numeric_limits<double>::quiet_NaN()
                   : kind == 1 ? std::numeric_limits<double>::infinity()
                               : -std::numeric_limits<double>::infinity();
  store_element_flat(v, at, x);
  return slot.name + "[" + std::to_string(at) + "]=" +
         (kind == 0   ? "nan"
          : kind == 1 ? "inf"
                      : "-inf");
}

std::string poke_int(FuzzInput& in, const Slot& slot, int64_t typical) {
  TensorView& v = *slot.view;
  if (v.data == nullptr || v.data == unreadable_page() || !view_bytes(v)) return "";
  if (v.dtype != DType::kInt32 && v.dtype != DType::kInt64) return "";
  const int64_t n = safe_numel(v);
  if (n <= 0) return "";
  const int64_t at =
      static_cast<int64_t>(in.below(static_cast<uint32_t>(std::min<int64_t>(n, 1 << 20))));
  int64_t x = 0;
  switch (in.below(8)) {
    case 0:
      x = -1;
      break;
    case 1:
      x = typical;
      break;
    case 2:
      x = sat_add(typical, -1);
      break;
    case 3:
      x = std::numeric_limits<int32_t>::max();
      break;
    case 4:
      x = std::numeric_limits<int32_t>::min();
      break;
    case 5: {  // a duplicate of another entry
      const int64_t from = element_at_flat(
          v, static_cast<int64_t>(in.below(static_cast<uint32_t>(std::min<int64_t>(n, 1 << 20)))));
      if (v.dtype == DType::kInt32) {
        int32_t i;
        std::memcpy(&i, static_cast<const char*>(v.data) + from * 4, 4);
        x = i;
      } else {
        std::memcpy(&x, static_cast<const char*>(v.data) + from * 8, 8);
      }
      break;
    }
    case 6:
      x = in.special(typical);
      break;
    default:
      x = in.in(-3, typical + 3);
      break;
  }
  if (v.dtype == DType::kInt32) {
    const int32_t i = static_cast<int32_t>(x);  // wraps: any int32 bit pattern is fair
    std::memcpy(static_cast<char*>(v.data) + element_at_flat(v, at) * 4, &i, 4);
    x = i;
  } else {
    std::memcpy(static_cast<char*>(v.data) + element_at_flat(v, at) * 8, &x, 8);
  }
  return slot.name + "[" + std::to_string(at) + "]=" + std::to_string(x);
}

}  // namespace kvflash::fuzz
