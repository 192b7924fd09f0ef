// Generic checks on user tensor views, shared by every operator's validator. Every check that
// fails records "[op] message" through core::fail and returns the status, so callers only
// propagate (KVFLASH_RETURN_IF_ERROR).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::core {

/// True when the view has no data pointer although it may hold elements. A view whose dims are
/// valid and include a 0 holds nothing, so a null pointer is legal there.
bool is_null_view(const TensorView& v);

/// The geometry every input view must have: a known dtype, rank in [0, kMaxRank], dims, strides
/// and offset >= 0 (Decision: negative strides are not supported), and a furthest element whose
/// byte offset fits int64 (checked, so no later index computation can overflow). A view holding
/// elements must have data. `name` is the argument name used in messages. *numel gets the count.
Status check_view(const char* op, const TensorView& v, const std::string& name, int64_t* numel);

/// The view with the strides that are never stepped set to 0: those of dims of extent 1, and all
/// of an empty view. Such strides may hold any value (aclCreateTensor takes them as given), so
/// validators normalise them before deriving byte strides, which could otherwise overflow.
TensorView canonical_strides(const TensorView& v);

/// a * b for stride scaling; fails with a message naming `name` when it overflows.
Status scaled_stride(const char* op, int64_t a, int64_t b, const std::string& name,
                     int64_t* result);

/// Element 0 of a view (data plus offset), as kernels address it; null for an empty view, which
/// is never addressed (and whose offset was not bounded, so data + offset could overflow).
void* element0(const TensorView& v);

/// "[2,1,16]" — the dims only.
std::string dims_str(const TensorView& v);
/// True when a and b have the same rank and dims.
bool same_dims(const TensorView& a, const TensorView& b);
/// True when a and b describe the same memory layout: dtype, device, rank, dims, strides and
/// offset (the data pointer is not compared). Plans compare a run's tensors with this.
bool same_layout(const TensorView& a, const TensorView& b);

/// The check a plan makes of one tensor of a run: kInvalid unless run has plan's layout
/// (same_layout), kNullPtr if it holds elements but has no data. Messages name `name` (with
/// "[index]" when index >= 0). Nothing is allocated unless the check fails: runs call it.
Status match_view(const char* op, const TensorView& plan, const TensorView& run, const char* name,
                  int64_t index = -1);
/// The same for an optional tensor, which must also be present exactly when it was at planning.
Status match_view(const char* op, const std::optional<TensorView>& plan,
                  const std::optional<TensorView>& run, const char* name);
/// The same for a tensor list, which must also have the plan's length ("name[i]" in messages).
Status match_view(const char* op, const std::vector<TensorView>& plan,
                  const std::vector<TensorView>& run, const char* name);
/// True when a run's scale_value is the plan's as the kernels use it, (float)scale_value; a NaN
/// matches a NaN (a plan made with a NaN scale runs with it, and outputs NaN).
bool same_scale(double plan, double run);
/// kInvalid "<name> differs from the plan's" unless same.
Status match_attr(const char* op, bool same, const char* name);

}  // namespace kvflash::core
