#include "core/device_fault.hpp"

#include <utility>

namespace kvflash::core {
namespace {
thread_local FaultRecordCollector* t_collector = nullptr;
}  // namespace

FaultRecordCollector::FaultRecordCollector() : outer_(t_collector) { t_collector = this; }

FaultRecordCollector::~FaultRecordCollector() { t_collector = outer_; }

bool post_fault_record(DeviceFaultRecord record) {
  if (t_collector == nullptr || record.device_record == nullptr || !record.decode ||
      record.bytes == 0 || record.bytes > kMaxFaultRecordBytes)
    return false;
  t_collector->records.push_back(std::move(record));
  return true;
}

}  // namespace kvflash::core
