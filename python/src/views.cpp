#include "views.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <ostream>
#include <string>

namespace kvflash::torch_ext {
namespace {

std::optional<DType> dtype_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return DType::kFloat32;
    case at::kHalf:
      return DType::kFloat16;
    case at::kBFloat16:
      return DType::kBFloat16;
    case at::kChar:
      return DType::kInt8;
    case at::kInt:
      return DType::kInt32;
    case at::kByte:
      return DType::kUInt8;
    case at::kLong:
      return DType::kInt64;
    case at::kBool:
      return DType::kBool;
    default:
      return std::nullopt;
  }
}

// "name" or "name[index]" in a message, formatted only when one is thrown.
struct ArgName {
  const char* name;
  int64_t index;
};
std::ostream& operator<<(std::ostream& os, const ArgName& n) {
  os << n.name;
  if (n.index >= 0) os << '[' << n.index << ']';
  return os;
}

thread_local bool meta_views = false;

// The data of a meta tensor's view (MetaViews): an address nothing reads.
alignas(64) std::byte meta_dummy[64];

Device device_of(const c10::Device& d, const char* op, const ArgName& name) {
  if (meta_views && d.is_meta()) return Device{DeviceType::kHost, 0};
  TORCH_CHECK_VALUE(d.is_cpu() || d.is_cuda(), "[", op, "] ", name, " is on device ", d.str(),
                    ", which kvflash does not run on (cpu)");
  if (d.is_cuda()) return Device{DeviceType::kCuda, d.has_index() ? d.index() : 0};
  return Device{DeviceType::kHost, 0};
}

}  // namespace

void check_defined(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK_VALUE(t.defined(), "[", op, "] ", name, " is an undefined tensor");
}

TensorView view_of(const at::Tensor& t, const char* op, const char* arg, int64_t index) {
  const ArgName name{arg, index};
  TORCH_CHECK_VALUE(t.defined(), "[", op, "] ", name, " is an undefined tensor");
  const auto dtype = dtype_of(t.scalar_type());
  TORCH_CHECK_VALUE(dtype.has_value(), "[", op, "] ", name, " has dtype torch.",
                    c10::getDtypeNames(t.scalar_type()).first,
                    ", which kvflash does not support (it takes float16, bfloat16, float32, int8, "
                    "uint8, int32, int64 and bool tensors, as each argument allows)");
  TensorView v;
  v.data = t.numel() == 0 ? nullptr : (meta_views && t.is_meta() ? meta_dummy : t.data_ptr());
  v.dtype = *dtype;
  v.rank = static_cast<int>(t.dim());
  const int r = std::min(v.rank, kMaxRank);
  for (int i = 0; i < r; ++i) {
    v.shape[i] = t.size(i);
    v.strides[i] = t.stride(i);
  }
  v.offset = 0;
  v.device = device_of(t.device(), op, name);
  return v;
}

TensorView unallocated_view(const std::vector<int64_t>& shape, at::ScalarType dtype,
                            const at::Tensor& like, const char* op, const char* name) {
  TensorView v;
  v.dtype = *dtype_of(dtype);  // an output dtype: always one kvflash has
  v.rank = static_cast<int>(shape.size());
  // Contiguous strides, wrapping on overflow (the library's checked arithmetic refuses those).
  uint64_t stride = 1;
  for (int i = std::min(v.rank, kMaxRank) - 1; i >= 0; --i) {
    v.shape[i] = shape[static_cast<size_t>(i)];
    v.strides[i] = static_cast<int64_t>(stride);
    stride *= static_cast<uint64_t>(shape[static_cast<size_t>(i)]);
  }
  v.data = meta_dummy;
  v.offset = 0;
  v.device = device_of(like.device(), op, ArgName{name, -1});
  return v;
}

std::optional<TensorView> view_of(const std::optional<at::Tensor>& t, const char* op,
                                  const char* name) {
  if (!t.has_value() || !t->defined()) return std::nullopt;
  return view_of(*t, op, name);
}

void throw_status(Status status) {
  std::string message = last_error_message();
  if (message.empty())
    message = "kvflash failed with status " + std::to_string(static_cast<int>(status));
  if (status == Status::kInvalid || status == Status::kNullPtr)
    C10_THROW_ERROR(ValueError, message);
  C10_THROW_ERROR(Error, message);
}

namespace {
bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// text with each whole-word `from` replaced by `to`.
std::string replace_word(const std::string& text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t at = text.find(from, pos);
    if (at == std::string::npos) break;
    const size_t end = at + from.size();
    const bool whole =
        (at == 0 || !word_char(text[at - 1])) && (end == text.size() || !word_char(text[end]));
    out.append(text, pos, (whole ? at : end) - pos);
    if (whole) out.append(to);
    pos = end;
  }
  out.append(text, pos, std::string::npos);
  return out;
}
}  // namespace

void throw_renamed(const c10::ValueError& e, const SchemaNames& names) {
  std::string message = e.what_without_backtrace();
  std::string prefix = std::string("[") + names.op + "]";
  if (!message.empty() && message[0] == '[') {
    const size_t close = message.find(']');
    if (close != std::string::npos) message.erase(0, close + 1);
  } else {
    prefix += ' ';
  }
  for (const auto& [from, to] : names.renames) message = replace_word(message, from, to);
  C10_THROW_ERROR(ValueError, prefix + message);
}

namespace {
// The stream a run on like's device is queued on: torch's current stream for a CUDA tensor (its
// cudaStream_t, through c10's device-generic interface, so this file needs no CUDA header and
// builds without a CUDA toolkit), null for a CPU tensor. Nothing here synchronises with the device.
void* stream_of(const at::Tensor& like) {
  if (!like.is_cuda()) return nullptr;
  const c10::impl::DeviceGuardImplInterface* impl =
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return impl->getStream(like.device()).native_handle();
}

template <class Plan, class Args>
void run_with_workspace(const Plan& plan, Args& args, const at::Tensor& like,
                        const at::Tensor& given = at::Tensor()) {
  args.num_threads = call_num_threads();
  // A CUDA run's workspace and kernels go to like's device and its current stream.
  const c10::OptionalDeviceGuard guard(like.is_cuda() ? std::optional<c10::Device>(like.device())
                                                      : std::nullopt);
  const size_t size = plan.workspace_size();
  at::Tensor ws;
  void* ptr = nullptr;
  if (size > 0 && given.defined() && given.device() == like.device() && given.is_contiguous() &&
      static_cast<size_t>(given.nbytes()) >= size) {
    ptr = given.data_ptr();
  } else if (size > 0) {
    ws = at::empty({static_cast<int64_t>(size)}, like.options().dtype(at::kByte));
    ptr = ws.data_ptr();
  }
  const Status status = plan.run(args, ptr, size, stream_of(like));
  if (status != Status::kSuccess) throw_status(status);
}
}  // namespace

int call_num_threads() {
  if (at::in_parallel_region()) return 1;
  return std::max(1, static_cast<int>(at::get_num_threads()));
}

#define KVFLASH_OPERATOR(op, Op, Plan, Args)                          \
  void run_plan(const Plan& plan, Args& args, const at::Tensor& like, \
                const at::Tensor& workspace) {                        \
    run_with_workspace(plan, args, like, workspace);                  \
  }
#define KVFLASH_COMPOSITE(op, Plan, Args) KVFLASH_OPERATOR(op, , Plan, Args)
#include "ops/operators.def"

MetaViews::MetaViews() : previous_(meta_views) { meta_views = true; }
MetaViews::~MetaViews() { meta_views = previous_; }

}  // namespace kvflash::torch_ext
