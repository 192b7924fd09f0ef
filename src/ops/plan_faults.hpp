// The fault route of the operators with an aclnn entry point, for the aclnn runtime
// (aclnn::plan_executor in src/aclnn/acl_objects.hpp): whether a plan's runs write a device fault
// record, and the status of a host copy of one (core::PlanHandle::writes_fault_record and
// decode_fault, defined with each plan, e.g. src/ops/ifa/ifa_plan.cpp).
// Library-internal.
#pragma once

#include "core/device_fault.hpp"
#include "kvflash/status.hpp"

namespace kvflash {

// Per plan of src/ops/operators.def.
#define KVFLASH_PLAN_FAULTS(Plan)                  \
  class Plan;                                      \
  bool plan_writes_fault_record(const Plan& plan); \
  Status plan_decode_fault(const Plan& plan, const core::FaultRecord& record);
#define KVFLASH_OPERATOR(op, Op, Plan, Args) KVFLASH_PLAN_FAULTS(Plan)
#define KVFLASH_COMPOSITE(op, Plan, Args) KVFLASH_PLAN_FAULTS(Plan)
#include "ops/operators.def"
#undef KVFLASH_PLAN_FAULTS

}  // namespace kvflash
