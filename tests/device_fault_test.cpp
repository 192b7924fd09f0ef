// The device-fault route (src/core/device_fault.hpp) without a GPU: records encoded on the host, as
// the CUDA kernels encode them (by hand, and through the KVFLASH_HD functions the SFA kernels run:
// core::sfa_resolve_lengths, core::sfa_row_fault_record), decode through the backend entries'
// fault hook (core::Backend::fault_status) into exactly the status and message the CPU backend
// gives for the same bad data: a bad IFA block id, bad SFA lengths, a bad SFA block slot. Also
// the record's place in every device workspace, records that cannot be decoded, and status() on
// host plans.
#include "core/device_fault.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/lists.hpp"
#include "cuda/ifa/ifa_cuda_plan.hpp"
#include "cuda/sfa/sfa_launch.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/merge.hpp"
#include "kvflash/sfa.hpp"
#include "ops/ifa/ifa_fault.hpp"
#include "ops/ifa/ifa_plan_impl.hpp"
#include "ops/plan_faults.hpp"
#include "ops/sfa/sfa_bind.hpp"
#include "ops/sfa/sfa_fault.hpp"
#include "ops/sfa/sfa_plan_impl.hpp"
#include "support/ifa_cases.hpp"
#include "support/merge_cases.hpp"
#include "support/sfa_cases.hpp"

namespace kvflash {
namespace {

using testing::IfaCase;
using testing::IfaCaseData;
using testing::SfaCase;
using testing::SfaCaseData;
using testing::SfaKvLayout;
using testing::SfaQLayout;

// The fault hook the backend list gives a plan of device `device`: the first entry of that device
// that has one (the CUDA entry in builds with it); for the host, checks that no entry has one.
template <typename B>
auto hook_of(std::span<const B> list, DeviceType device) -> decltype(B::fault_status) {
  for (const B& b : list) {
    if (b.device != device) continue;
    if (device == DeviceType::kHost) {
      EXPECT_EQ(b.fault_status, nullptr) << b.name << ": host entries return their faults";
    } else if (b.fault_status != nullptr) {
      return b.fault_status;
    }
  }
  return nullptr;
}

// The record decoded as a device plan's status() / the aclnn runtime decode it: through the CUDA
// entry's hook where the build has one, else the hook's function itself (what the entry names).
Status ifa_decode(const core::IfaProblem& p, const core::FaultRecord& r) {
  const auto hook = hook_of(ifa_backends(), DeviceType::kCuda);
  return hook != nullptr ? hook(p, r) : cuda::ifa_cuda_decode_fault(p, r);
}
Status sfa_decode(const core::SfaProblem& p, const core::FaultRecord& r) {
  const auto hook = hook_of(sfa_backends(), DeviceType::kCuda);
  return hook != nullptr ? hook(p, r) : sfa::sfa_fault_status(p, r);
}

struct CpuVerdict {
  Status status = Status::kSuccess;
  std::string message;
};

template <typename Plan, typename Args>
CpuVerdict run_on_cpu(const Args& args, std::unique_ptr<Plan>* plan) {
  CpuVerdict v;
  EXPECT_EQ(Plan::create(args, plan), Status::kSuccess) << last_error_message();
  if (!*plan) return v;
  std::vector<std::byte> ws((*plan)->workspace_size());
  v.status = (*plan)->run(args, ws.data(), ws.size());
  v.message = last_error_message();
  // The host plan's status() reads nothing: run() returned the fault already.
  EXPECT_EQ((*plan)->status(ws.data()), Status::kSuccess);
  EXPECT_EQ(std::string(last_error_message()), "");
  return v;
}

void set_i32(const TensorView& v, int64_t i, int32_t x) {
  static_cast<int32_t*>(v.data)[v.offset + i * v.strides[0]] = x;
}

TEST(DeviceFaultRecord, SitsAtTheAlignedStartOfEveryDeviceWorkspace) {
  alignas(256) std::byte ws[1024];
  for (size_t shift : {size_t{0}, size_t{1}, size_t{8}, size_t{255}}) {
    const void* at = core::fault_record_at(ws + shift);
    const size_t off = static_cast<size_t>(static_cast<const std::byte*>(at) - ws);
    EXPECT_EQ(off % core::kFaultRecordAlign, 0u);
    EXPECT_GE(off, shift);
    EXPECT_LT(off, shift + core::kFaultRecordAlign);
  }
  core::WorkspaceArena arena(core::kFaultRecordAlign);
  EXPECT_EQ(core::take_fault_record(arena), 0u);
  EXPECT_GE(arena.extent(), sizeof(core::FaultRecord));
  // The CUDA layouts: the record's alignment, and IFA's record first (SFA's layout is the
  // kernels' own, sfa_device.cuh, which takes it first too).
  static_assert(cuda::kIfaCudaWorkspaceAlign == core::kFaultRecordAlign);
  static_assert(cuda::kSfaCudaWorkspaceAlign == core::kFaultRecordAlign);
  core::IfaProblem p;
  p.batch = 2;
  p.num_kv_heads = 1;
  p.group = 1;
  p.num_heads = 1;
  p.head_dim = 64;
  p.kv_len = {3, 700};
  EXPECT_EQ(cuda::ifa_cuda_layout(p).fault, 0u);
  EXPECT_GE(cuda::ifa_cuda_layout(p).seqs, sizeof(core::FaultRecord));
  // A default record says "no fault" to every decoder.
  EXPECT_EQ(ifa::ifa_fault_status(core::FaultRecord{}), Status::kSuccess);
  EXPECT_EQ(sfa::sfa_fault_status(core::SfaProblem{}, core::FaultRecord{}), Status::kSuccess);
}

TEST(DeviceFaultRecord, EveryDeviceEntryHasAHookAndNoHostEntryHasOne) {
  EXPECT_EQ(hook_of(ifa_backends(), DeviceType::kHost), nullptr);
  EXPECT_EQ(hook_of(sfa_backends(), DeviceType::kHost), nullptr);
  EXPECT_EQ(hook_of(merge_backends(), DeviceType::kHost), nullptr);
  for (const auto& b : ifa_backends()) {
    if (b.device != DeviceType::kHost) {
      EXPECT_NE(b.fault_status, nullptr) << b.name;
    }
  }
  for (const auto& b : sfa_backends()) {
    if (b.device != DeviceType::kHost) {
      EXPECT_NE(b.fault_status, nullptr) << b.name;
    }
  }
}

// IFA: block_table[1][3] = -7, inside batch 1's 70 attended positions (slot 3: 48..63).
TEST(DeviceFaultRecord, IfaBadBlockIdGivesTheCpusMessage) {
  IfaCase c;
  c.batch = 3;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.kv_lens = {40, 70, 5};
  c.paged = true;
  c.block_size = 16;
  IfaCaseData data(c);
  IfaArgs& a = data.mutable_args();
  const TensorView& t = *a.block_table;
  static_cast<int32_t*>(t.data)[t.offset + 1 * t.strides[0] + 3 * t.strides[1]] = -7;
  std::unique_ptr<IfaPlan> plan;
  const CpuVerdict cpu = run_on_cpu(a, &plan);
  ASSERT_EQ(cpu.status, Status::kInvalid);
  ASSERT_NE(cpu.message.find("block_table[1][3] (-7)"), std::string::npos) << cpu.message;
  const core::IfaProblem& p = IfaPlanAccess::impl(*plan).problem;

  // What ifa_kernel.cu's report_kernel writes for it.
  core::FaultRecord r = core::fault_of(core::kFaultOpIfa, core::kFaultBlockId, 1);
  r.slot = 3;
  r.value = -7;
  r.limit = data.num_blocks();
  r.len = 70;
  r.begin = 0;
  EXPECT_EQ(ifa_decode(p, r), Status::kInvalid);
  EXPECT_EQ(std::string(last_error_message()), cpu.message);
  // The host plan's own route decodes nothing (its entry has no hook).
  EXPECT_FALSE(plan_writes_fault_record(*plan));
  EXPECT_EQ(plan_decode_fault(*plan, r), Status::kSuccess);
}

TEST(DeviceFaultRecord, IfaPaddingPastTheMaskNamesTheBatch) {
  core::FaultRecord r = core::fault_of(core::kFaultOpIfa, core::kFaultPaddingPastMask, 2);
  r.value = 3;
  r.len = 4;
  r.begin = 10;
  r.limit = 12;
  EXPECT_EQ(ifa_decode(core::IfaProblem{}, r), Status::kInvalid);
  EXPECT_EQ(std::string(last_error_message()),
            "[incre_flash_attention] kv_padding_size (3) puts batch 2's 4 positions at [10, 14), "
            "beyond the atten_mask's last dim (12); the outputs of batch 2 are NaN");
}

// Two PA_BSND batches; batch 1's rows (2 and 3) select from its block slot 0.
SfaCase paged_case() {
  SfaCase c;
  c.kv_layout = SfaKvLayout::kPaBsnd;
  c.num_heads = 4;
  c.sparse_size = 8;
  c.q_lens = {2, 2};
  c.kv_lens = {40, 20};
  c.block_size = 16;
  c.indices = testing::SfaIndexPattern::kClean;
  return c;
}

TEST(DeviceFaultRecord, SfaBadBlockSlotGivesTheCpusMessage) {
  for (const int32_t bad : {-1, 1 << 20}) {
    SfaCaseData data(paged_case());
    *data.block_table_entry(1, 0) = bad;
    std::unique_ptr<SfaPlan> plan;
    const CpuVerdict cpu = run_on_cpu(data.args(), &plan);
    ASSERT_EQ(cpu.status, Status::kInvalid);
    ASSERT_NE(cpu.message.find("block_table[1][0] (" + std::to_string(bad) + ")"),
              std::string::npos)
        << cpu.message;
    const core::SfaProblem& p = SfaPlanAccess::impl(*plan).problem;

    // By hand: what the record says.
    core::FaultRecord r = core::fault_of(core::kFaultOpSfa, core::kFaultBlockId, 1);
    r.row = 2;
    r.slot = 0;
    r.value = bad;
    r.limit = data.num_blocks();
    EXPECT_EQ(sfa_decode(p, r), Status::kInvalid);
    EXPECT_EQ(std::string(last_error_message()), cpu.message);

    // Through the function the CUDA report kernel runs, over the tables its prologue derives,
    // with the row flags its attention kernels set (every row of batch 1).
    core::SfaData d;
    sfa::bind_data(p, data.args(), &d);
    std::vector<core::SfaBatch> batches(static_cast<size_t>(p.batch));
    std::vector<core::SfaRow> rows(static_cast<size_t>(p.num_rows));
    core::FaultRecord none;
    ASSERT_TRUE(core::sfa_resolve_lengths(p, d, batches.data(), &none));
    EXPECT_EQ(none.kind, core::kFaultNone);
    core::sfa_map_rows(p, batches.data(), rows.data());
    d.batches = batches.data();
    d.rows = rows.data();
    std::vector<uint8_t> flags(static_cast<size_t>(p.num_rows), 0);
    core::FaultRecord found;
    EXPECT_FALSE(core::sfa_row_fault_record(p, d, flags.data(), &found));
    for (size_t i = 0; i < rows.size(); ++i) flags[i] = rows[i].batch == 1 ? 1 : 0;
    ASSERT_TRUE(core::sfa_row_fault_record(p, d, flags.data(), &found));
    EXPECT_EQ(found.row, 2);
    EXPECT_EQ(found.slot, 0);
    EXPECT_EQ(found.value, bad);
    EXPECT_EQ(sfa_decode(p, found), Status::kInvalid);
    EXPECT_EQ(std::string(last_error_message()), cpu.message);
  }
}

// One bad actual-length entry per case: the CPU's message, the record by hand, and the record
// core::sfa_resolve_lengths (the CUDA prologue's function) writes for the same data.
struct LengthCase {
  SfaQLayout q;
  SfaKvLayout kv;
  bool query;     // actual_seq_lengths_query, else _kv
  int64_t entry;  // batch
  int32_t value;
  const char* needle;
};

TEST(DeviceFaultRecord, SfaBadLengthsGiveTheCpusMessage) {
  const LengthCase cases[] = {
      {SfaQLayout::kBsnd, SfaKvLayout::kPaBsnd, false, 1, 10000,
       "actual_seq_lengths_kv[1] (10000) must be in [0, block_table columns * block_size = "},
      {SfaQLayout::kBsnd, SfaKvLayout::kBsnd, false, 0, -3, "actual_seq_lengths_kv[0] (-3)"},
      {SfaQLayout::kBsnd, SfaKvLayout::kBsnd, true, 1, 99, "actual_seq_lengths_query[1] (99)"},
      {SfaQLayout::kTnd, SfaKvLayout::kTnd, false, 1, 2, "non-decreasing prefix sums"},
      {SfaQLayout::kTnd, SfaKvLayout::kTnd, false, 1, 5000, "exceeds key T2"},
      {SfaQLayout::kTnd, SfaKvLayout::kTnd, true, 1, 5000, "exceeds query T1"},
  };
  for (const LengthCase& lc : cases) {
    SCOPED_TRACE(lc.needle);
    SfaCase c;
    c.q_layout = lc.q;
    c.kv_layout = lc.kv;
    c.num_heads = 2;
    c.sparse_size = 4;
    c.q_lens = {1, 2};
    c.kv_lens = {8, 20};
    c.q_slack = 1;
    c.block_size = 16;
    SfaCaseData data(c);
    const SfaArgs& a = data.args();
    const TensorView& t = lc.query ? *a.actual_seq_lengths_query : *a.actual_seq_lengths_kv;
    const auto* entries = static_cast<const int32_t*>(t.data) + t.offset;
    const int32_t before = lc.entry > 0 ? entries[(lc.entry - 1) * t.strides[0]] : 0;
    set_i32(t, lc.entry, lc.value);
    std::unique_ptr<SfaPlan> plan;
    const CpuVerdict cpu = run_on_cpu(a, &plan);
    ASSERT_EQ(cpu.status, Status::kInvalid);
    ASSERT_NE(cpu.message.find(lc.needle), std::string::npos) << cpu.message;
    const core::SfaProblem& p = SfaPlanAccess::impl(*plan).problem;

    core::FaultRecord r = core::fault_of(
        core::kFaultOpSfa, lc.query ? core::kFaultQueryLength : core::kFaultKvLength, lc.entry);
    r.value = lc.value;
    r.limit = lc.query ? core::sfa_query_length_limit(p) : core::sfa_kv_length_limit(p);
    r.begin = (lc.query ? p.query_tnd : p.kv_tnd) ? before : 0;  // prefix sums: the entry before
    EXPECT_EQ(sfa_decode(p, r), Status::kInvalid);
    EXPECT_EQ(std::string(last_error_message()), cpu.message);

    core::SfaData d;
    sfa::bind_data(p, a, &d);
    std::vector<core::SfaBatch> batches(static_cast<size_t>(p.batch));
    core::FaultRecord found;
    ASSERT_FALSE(core::sfa_resolve_lengths(p, d, batches.data(), &found));
    EXPECT_EQ(found.kind, r.kind);
    EXPECT_EQ(found.batch, r.batch);
    EXPECT_EQ(found.value, r.value);
    EXPECT_EQ(found.limit, r.limit);
    EXPECT_EQ(found.begin, r.begin);
    EXPECT_EQ(sfa_decode(p, found), Status::kInvalid);
    EXPECT_EQ(std::string(last_error_message()), cpu.message);
  }
}

// A record no backend writes is a library bug, never the user's data: kRuntime, not 161002.
TEST(DeviceFaultRecord, UnreadableRecordsAreRuntimeErrors) {
  core::FaultRecord sfa_record = core::fault_of(core::kFaultOpSfa, core::kFaultBlockId, 0);
  EXPECT_EQ(ifa_decode(core::IfaProblem{}, sfa_record), Status::kRuntime);
  EXPECT_NE(std::string(last_error_message()).find("cannot be decoded (status 161002, operator 2"),
            std::string::npos)
      << last_error_message();
  core::FaultRecord ifa_record = core::fault_of(core::kFaultOpIfa, core::kFaultPaddingPastMask, 0);
  EXPECT_EQ(sfa_decode(core::SfaProblem{}, ifa_record), Status::kRuntime);
  core::FaultRecord unknown = core::fault_of(core::kFaultOpSfa, core::kFaultPaddingPastMask, 0);
  EXPECT_EQ(sfa_decode(core::SfaProblem{}, unknown), Status::kRuntime);
  core::FaultRecord kind9 = core::fault_of(core::kFaultOpIfa, static_cast<core::FaultKind>(9), 0);
  EXPECT_EQ(ifa_decode(core::IfaProblem{}, kind9), Status::kRuntime);
  core::FaultRecord status_only;
  status_only.status = 7;
  EXPECT_EQ(ifa_decode(core::IfaProblem{}, status_only), Status::kRuntime);
  core::FaultRecord kind_only;
  kind_only.kind = core::kFaultBlockId;
  EXPECT_EQ(sfa_decode(core::SfaProblem{}, kind_only), Status::kRuntime);
}

TEST(DeviceFaultRecord, HostPlansStatusIsSuccess) {
  const std::vector<testing::MergeCase> cases = testing::merge_cases();
  ASSERT_FALSE(cases.empty());
  testing::MergeCaseData data;
  testing::fill_merge_case(cases[0], &data, 1);
  std::unique_ptr<MergePlan> plan;
  ASSERT_EQ(MergePlan::create(data.args, &plan), Status::kSuccess) << last_error_message();
  EXPECT_EQ(plan->status(nullptr), Status::kSuccess);
  EXPECT_EQ(plan->run(data.args, nullptr, 0), Status::kSuccess) << last_error_message();
  EXPECT_EQ(plan->status(nullptr), Status::kSuccess);
}

}  // namespace
}  // namespace kvflash
