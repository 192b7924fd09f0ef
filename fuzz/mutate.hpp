// Generic mutations of tensor views, shared by the IFA and SFA decoders: a call's tensors are
// listed as slots (a view, its name and its role), and a mutation changes one field of one slot's
// metadata (a dim, a stride, the offset, the rank, the dtype, the data pointer, the device) or one
// element of its data. A view whose geometry changed is moved to fresh memory sized for its new
// reach ("re-homed") and refilled as its role is filled, so that a call the library accepts can
// still be run and checked against the reference; a view too large for that is left unbacked
// (its data is an unreadable page) and the call is only planned, never run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "harness.hpp"
#include "kvflash/tensor.hpp"
#include "support/test_rng.hpp"

namespace kvflash::fuzz {

/// How a tensor's data is filled when it is re-homed (the distributions of the case builders).
enum class Role {
  kData,         ///< q, k, v, pse, ropes: N(0, 1) (int8: uniform codes)
  kAqScale,      ///< IFA antiquant scale: U(0.005, 0.03)
  kAqOffset,     ///< IFA antiquant offset: U(-8, 8)
  kQuantScale,   ///< IFA quant_scale2: U(20, 70)
  kQuantOffset,  ///< IFA quant_offset2: U(-6, 6)
  kMask,         ///< 0/1 bytes
  kIds,          ///< block ids and sparse indices: small integers from -2
  kLengths,      ///< lengths: small non-negative integers
  kPadding,      ///< kv_padding_size: small non-negative integers
  kSink,         ///< N(0, 2)
  kScalar,       ///< tiny unused tensors (dequant scales): 1.0
  kOutput,       ///< outputs: 0xFF bytes
};

struct Slot {
  TensorView* view;
  std::string name;
  Role role;
  bool output = false;
  bool inf_ok = false;  ///< +-inf may be injected (not in V-like data: conventions.md, inf in V)
};

/// The memory a fuzz case owns besides the case builder's: re-homed inputs, guarded outputs.
class CaseMemory {
 public:
  /// Largest re-homed tensor; a view reaching further is left unbacked.
  static constexpr uint64_t kMaxBytes = uint64_t{1} << 21;

  /// Moves slot's view to fresh memory for its current geometry (or marks it unbacked).
  void rehome(const Slot& slot, testing::TestRng& rng);
  /// A new contiguous input tensor owned here, filled for its role.
  TensorView make(DType dtype, std::vector<int64_t> shape, Role role, testing::TestRng& rng);
  /// Gives an output view a guarded buffer of its reach, filled with 0xFF.
  void guard_output(const Slot& slot, size_t misalign);
  /// Snapshots input slots (their whole reach) and output buffers before a call.
  void snapshot(const std::vector<Slot>& slots);
  /// Fails if an input changed, a guard was written, or an output byte outside the output's
  /// elements (everything, when !written) changed.
  void check_after(const std::vector<Slot>& slots, bool written, const std::string& when) const;
  /// Re-snapshots the outputs (a second call on the same outputs).
  void resnapshot_outputs();
  /// An output the call must not write at all (SFA's softmax outputs without return_softmax_lse).
  void forbid(const TensorView* output) { forbidden_.push_back(output); }

  bool unbacked = false;
  std::vector<std::string> unbacked_names;

 private:
  std::vector<std::unique_ptr<Guarded>> inputs_;
  struct Out {
    const TensorView* view;
    OutputBuffer buf;
  };
  std::vector<Out> outputs_;
  std::vector<const TensorView*> forbidden_;
  Unchanged unchanged_;
};

/// Fills every element of a view for its role.
void fill_view(const TensorView& v, Role role, testing::TestRng& rng);

/// One metadata mutation of slot (field and value chosen from in); geometry changes re-home.
/// Returns a short description for the context.
std::string mutate_view(FuzzInput& in, const Slot& slot, CaseMemory& mem, testing::TestRng& rng);

/// Writes a NaN, +inf or -inf (inf only when slot.inf_ok) at one element chosen from in.
std::string inject_nonfinite(FuzzInput& in, const Slot& slot);

/// Writes a special integer (-1, out of range, INT32_MAX, ...) at one element of an int32 slot.
std::string poke_int(FuzzInput& in, const Slot& slot, int64_t typical);

/// A dtype for a mutation: every kvflash dtype and some values that are none.
DType any_dtype(FuzzInput& in);

}  // namespace kvflash::fuzz
