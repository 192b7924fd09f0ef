// torch.ops.kvflash_testing: what the Python tests need from the C++ side and the wheel must not
// ship. Built on request only (python/CMakeLists.txt, target kvflash_torch_testing).
//
//   ifa_check / sfa_check   run the double-precision reference (reference/) on the operator's
//                           inputs and compare the operator's outputs with it using the project's
//                           comparators (tests/support: every element, tolerances of
//                           docs/conventions.md, worst element reported). "" means it passed.
//                           Their schemas are the operators' (schemas.hpp) with the outputs as
//                           inputs and the check's options, read through the same field tables.
//   fia_check               the same for PFA / FIA (reference/fia_reference.hpp,
//   compare_fia_output):
//                           FIA v1's schema with the outputs as inputs, plus learnable_sink and
//                           prompt (PFA), read through FIA's field table.
//   ifa_run_loop            the per-call time of IfaPlan::run in a C++ loop (plan made once), the
//                           baseline for the operator's per-call overhead.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fia_reference.hpp"
#include "ifa_reference.hpp"
#include "ops/fia/fia_fields.hpp"
#include "ops/ifa/ifa_fields.hpp"
#include "ops/sfa/sfa_fields.hpp"
#include "schema_args.hpp"
#include "schemas.hpp"
#include "sfa_reference.hpp"
#include "support/compare.hpp"
#include "support/fia_cases.hpp"
#include "support/sfa_compare.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

// The check's options, after the operator's arguments.
constexpr const char* kCheckOptions = ", str case_name=\"\", bool allow_mostly_empty=False) -> str";

// A check's schema: the schema's arguments that are not fields of the table, and where the
// options are.
template <const auto& kFields>
struct CheckSchema {
  CheckSchema(const c10::FunctionSchema& s, std::initializer_list<std::string_view> extras)
      : args(s, extras),
        case_name(args.index().at("case_name")),
        allow_mostly_empty(args.index().at("allow_mostly_empty")) {}
  SchemaArgs<kFields> args;
  int case_name, allow_mostly_empty;
};

void ifa_check(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  static const CheckSchema<ifa::kFields> s(
      op.schema(), {"padding_mask", "return_softmax_lse", "case_name", "allow_mostly_empty"});
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  IfaArgs args;
  s.args.read(in, &args);
  const auto ref = reference::ifa_reference(args);
  testing::IfaCompareOptions options;
  options.allow_mostly_empty = in[s.allow_mostly_empty].toBool();
  const auto result =
      testing::compare_ifa_output(in[s.case_name].toStringRef(), args, ref, options);
  finish(stack, n, result ? std::string() : std::string(result.message()));
}

void sfa_check(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  static const CheckSchema<sfa::kFields> s(op.schema(), {"case_name", "allow_mostly_empty"});
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  SfaArgs args;
  s.args.read(in, &args);
  const auto ref = reference::sfa_reference(args);
  const auto result = testing::compare_sfa_output(in[s.case_name].toStringRef(), args, ref,
                                                  in[s.allow_mostly_empty].toBool());
  finish(stack, n, result ? std::string() : std::string(result.message()));
}

void fia_check(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  static const CheckSchema<fia::kFields> s(op.schema(), {"case_name", "allow_mostly_empty"});
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  FiaArgs args;  // the oracle's call too (reference::FiaCall is FiaArgs)
  s.args.read(in, &args);
  if (!args.softmax_lse_flag) args.softmax_lse.reset();  // not written: nothing to compare
  const auto ref = reference::fia_reference(args);
  double worst = 0;
  const auto result = testing::compare_fia_output(in[s.case_name].toStringRef(), args, ref, &worst,
                                                  in[s.allow_mostly_empty].toBool());
  finish(stack, n, result ? std::string() : std::string(result.message()));
}

void ifa_run_loop(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  static const SchemaArgs<ifa::kFields> s(op.schema(), {"iters"});
  static const int iters_at = s.index().at("iters");
  const size_t n = s.index().num_arguments();
  const auto in = arguments(*stack, n);
  IfaArgs args;
  s.read(in, &args);
  const int64_t iters = in[iters_at].toInt();
  std::unique_ptr<IfaPlan> plan;
  if (const Status st = IfaPlan::create(args, &plan); st != Status::kSuccess) throw_status(st);
  std::vector<std::byte> ws(plan->workspace_size());
  auto once = [&] {
    const Status st = plan->run(args, ws.data(), ws.size());
    if (st != Status::kSuccess) throw_status(st);
  };
  once();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) once();
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  finish(stack, n, dt.count() / static_cast<double>(std::max<int64_t>(iters, 1)));
}

template <void (*kernel)(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*)>
torch::CppFunction boxed() {
  return torch::CppFunction::makeFromBoxedFunction<kernel>();
}

}  // namespace
}  // namespace kvflash::torch_ext

TORCH_LIBRARY(kvflash_testing, m) {
  using namespace kvflash::torch_ext;
  m.def(edit_schema(ifa_ext_schema(),
                    {{"incre_flash_attention(", "ifa_check("},
                     {"Tensor[] value, *,",
                      "Tensor[] value, Tensor attention_out, Tensor? softmax_lse, *,"},
                     {") -> (Tensor attention_out, Tensor softmax_lse)", kCheckOptions}})
            .c_str(),
        boxed<&ifa_check>());
  m.def(edit_schema(kSfaNpuSchema,
                    {{"npu_sparse_flash_attention(", "sfa_check("},
                     {"float scale_value, *,",
                      "float scale_value, Tensor attention_out, Tensor softmax_max, "
                      "Tensor softmax_sum, *,"},
                     {") -> (Tensor, Tensor, Tensor)", kCheckOptions}})
            .c_str(),
        boxed<&sfa_check>());
  m.def(edit_schema(
            kFiaNpuSchema,
            {{"npu_fused_infer_attention_score(", "fia_check("},
             {"Tensor value, *,", "Tensor value, Tensor attention_out, Tensor? softmax_lse, *,"},
             {") -> (Tensor, Tensor)",
              ", Tensor? learnable_sink=None, bool prompt=False, str case_name=\"\", "
              "bool allow_mostly_empty=False) -> str"}})
            .c_str(),
        boxed<&fia_check>());
  m.def(
      "ifa_run_loop(Tensor query, Tensor[] key, Tensor[] value, Tensor attention_out, int iters, "
      "*, SymInt[]? actual_seq_lengths=None, Tensor? block_table=None, int num_heads=1, "
      "float scale_value=1.0, str input_layout=\"BSH\", int num_key_value_heads=0, "
      "int block_size=0) -> float",
      boxed<&ifa_run_loop>());
}
