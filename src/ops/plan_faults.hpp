// The fault route of the operators with an aclnn entry point, for the aclnn runtime
// (aclnn::plan_executor in src/aclnn/acl_objects.hpp): whether a plan's runs write a device fault
// record, and the status of a host copy of one (core::PlanHandle::writes_fault_record and
// decode_fault, defined with each plan, e.g. src/ops/ifa/ifa_plan.cpp).
// Library-internal.
#pragma once

#include "core/device_fault.hpp"
#include "kvflash/status.hpp"

namespace kvflash {

class IfaPlan;
class SfaPlan;
class LightningIndexerPlan;
class FiaPlan;
class MergePlan;
class FlashAttentionScorePlan;
class ScatterPaKvCachePlan;

bool plan_writes_fault_record(const IfaPlan& plan);
bool plan_writes_fault_record(const SfaPlan& plan);
bool plan_writes_fault_record(const LightningIndexerPlan& plan);
bool plan_writes_fault_record(const FiaPlan& plan);
bool plan_writes_fault_record(const ScatterPaKvCachePlan& plan);
bool plan_writes_fault_record(const MergePlan& plan);
bool plan_writes_fault_record(const FlashAttentionScorePlan& plan);
Status plan_decode_fault(const IfaPlan& plan, const core::FaultRecord& record);
Status plan_decode_fault(const SfaPlan& plan, const core::FaultRecord& record);
Status plan_decode_fault(const LightningIndexerPlan& plan, const core::FaultRecord& record);
Status plan_decode_fault(const FiaPlan& plan, const core::FaultRecord& record);
Status plan_decode_fault(const ScatterPaKvCachePlan& plan, const core::FaultRecord& record);
Status plan_decode_fault(const MergePlan& plan, const core::FaultRecord& record);
Status plan_decode_fault(const FlashAttentionScorePlan& plan, const core::FaultRecord& record);

}  // namespace kvflash
