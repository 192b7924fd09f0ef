#include "aclnn_protocol.hpp"

#include "harness.hpp"

namespace kvflash::fuzz {
namespace {

// The stream a call runs on half the time (the other half: the null default stream), created
// once per process.
aclrtStream created_stream() {
  static aclrtStream s = [] {
    aclrtStream h = nullptr;
    if (aclrtCreateStream(&h) != ACL_SUCCESS) violated("aclrtCreateStream failed");
    return h;
  }();
  return s;
}

void check_phase1(const AclnnProtocol& p, const AclnnPhase1& phase1, const AclnnSlots& s) {
  check_status(phase1.status, aclGetRecentErrMsg(), phase1.op ? phase1.op : p.op, *p.names,
               "phase 1");
  const bool null_required = phase1.null_required || !s.ws_slot || !s.exec_slot;
  if (null_required && phase1.status != 161001)
    violated("phase 1 with a null required argument returned " + std::to_string(phase1.status));
  if (phase1.status == 0) return;
  if (s.exec_slot && s.exec != nullptr) violated("phase 1 failed but *executor is not null");
  if (s.ws_slot && s.ws_size != AclnnSlots::kUnsetWorkspace && s.ws_size != 0)
    violated("phase 1 failed but changed *workspaceSize");
}

}  // namespace

std::optional<AclnnRun> drive_aclnn(FuzzInput& in, const AclnnProtocol& p,
                                    const AclnnPhase1& phase1, const AclnnSlots& slots) {
  const auto memory = [&](bool ran, const char* what) {
    if (p.check_memory) p.check_memory(ran, what);
  };
  check_phase1(p, phase1, slots);
  if (phase1.status != 0) {
    ++stats().refused;
    memory(false, "phase 1 failed");
    return std::nullopt;
  }
  if (phase1.broken) violated("phase 1 accepted a destroyed, foreign or null handle");
  aclOpExecutor* exec = slots.exec;
  const uint64_t ws_size = slots.ws_size;
  if (exec == nullptr) violated("phase 1 succeeded without an executor");
  if (!p.affordable(ws_size)) {
    if (aclDestroyAclOpExecutor(exec) != 0)
      violated("aclDestroyAclOpExecutor of a live executor failed");
    ++stats().planned_only;
    memory(false, "planned only");
    return std::nullopt;
  }
  if (p.destroy_handles && in.rare(3)) p.destroy_handles();

  Guarded ws(static_cast<size_t>(ws_size), in.below(64));
  aclrtStream stream = in.flag() ? nullptr : created_stream();
  const auto expect = [&](aclnnStatus got, aclnnStatus want, const char* what) {
    if (got != want)
      violated(std::string("phase 2 ") + what + " returned " + std::to_string(got) + ", want " +
               std::to_string(want) + ": " + aclGetRecentErrMsg());
    check_status(got, aclGetRecentErrMsg(), p.op, *p.names, std::string("phase 2 ") + what);
  };
  switch (in.below(8)) {  // a refused phase 2 first: the executor must stay usable
    case 0:
      if (ws_size > 0)
        expect(p.phase2(ws.data(), ws_size - 1, exec, stream), 161002, "small workspace");
      break;
    case 1:
      if (ws_size > 0) expect(p.phase2(nullptr, ws_size, exec, stream), 161001, "null workspace");
      break;
    case 2: {
      int64_t not_a_stream = 0;
      expect(p.phase2(ws.data(), ws_size, exec, &not_a_stream), 161002, "dead stream");
      break;
    }
    case 3: {
      const aclnnStatus got = p.foreign(ws.data(), ws_size, exec, stream);
      if (got != 161002)
        violated("another operator's phase 2 with this executor returned " + std::to_string(got));
      break;
    }
    default:
      break;
  }
  const bool repeat = in.rare(6);
  if (repeat && aclSetAclOpExecutorRepeatable(exec) != 0)
    violated("aclSetAclOpExecutorRepeatable failed");
  expect(p.phase2(ws.data(), ws_size, exec, stream), 0, "");
  if (repeat) {
    expect(p.phase2(ws.data(), ws_size, exec, stream), 0, "(repeat)");
    if (aclDestroyAclOpExecutor(exec) != 0)
      violated("aclDestroyAclOpExecutor of a repeatable executor failed");
  } else if (in.rare(4)) {
    expect(p.phase2(ws.data(), ws_size, exec, stream), 161002, "(consumed executor)");
  }
  const aclError sync = aclrtSynchronizeStream(stream);
  AclnnRun run;
  if (sync == ACL_ERROR_RT_AICORE_EXCEPTION) {
    run.status = 161002;
    run.message = aclGetRecentErrMsg();
    if (run.message.find("status 161002") == std::string::npos)
      violated("aclrtSynchronizeStream returned 507015 with message '" + run.message + "'");
    check_status(run.status, run.message.c_str(), p.op, *p.names, "aclrtSynchronizeStream");
  } else if (sync != ACL_SUCCESS) {
    violated("aclrtSynchronizeStream returned " + std::to_string(sync) + ": " +
             aclGetRecentErrMsg());
  }
  memory(true, "after the run");
  ws.check_guards("the workspace");
  return run;
}

}  // namespace kvflash::fuzz
