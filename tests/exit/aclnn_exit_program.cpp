// Process teardown with aclnn work still queued: a CANN-style program that enqueues several large
// IncreFlashAttention runs and then leaves in the order named on its command line. kvflash must
// let it exit with the code it chose: no hang, no crash, no sanitizer report. Run by
// tests/exit/run_expect.cmake (tests/aclnn_exit.cmake), which checks the exit status under a
// timeout.
//
//   aclnn_exit_program <steps> <exit code> [calls] [seq len]
//
// <steps> is a comma-separated list, done in order after the runs are queued:
//   stream | default | both   where the runs are queued (a created stream, the null stream, both)
//   threads                   also queue the runs from 3 host threads, each on a stream of its
//                             own (the threads are joined, their streams left with work queued)
//   static                    a global object, built before main, synchronises the stream(s),
//                             checks the outputs, frees the buffers and destroys the executors'
//                             tensors from its destructor, after main has returned
//   destroy                   aclrtDestroyStream
//   reset                     aclrtResetDevice(0)
//   finalize                  aclFinalize
//   sync                      aclrtSynchronizeStream on every stream used
//   exit                      std::exit(code) instead of returning from main
//   fail                      an acl call fails in main and another in the static destructor
//                             (the per-thread error message outlives main's thread_locals)
// With none of destroy / finalize / sync / static, main returns while most runs are still queued.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_incre_flash_attention.h"

namespace {

// Every value of V is this fp16 bit pattern (aclrtMemset fills bytes) and K is zero, so every
// output element of a finished run is exactly kVBits.
constexpr uint8_t kVByte = 0x3C;
constexpr uint16_t kVBits = 0x3C3C;

[[noreturn]] void die(const char* what, int code) {
  std::fprintf(stderr, "aclnn_exit_program: %s failed (%d): %s\n", what, code,
               aclGetRecentErrMsg());
  std::fflush(stderr);
  std::_Exit(90);
}

#define CHECK_ACL(expr)                     \
  do {                                      \
    const int rc_ = static_cast<int>(expr); \
    if (rc_ != 0) die(#expr, rc_);          \
  } while (0)

struct Buffer {
  void* addr = nullptr;
  size_t bytes = 0;
};

// What the late-cleanup global looks after: filled by main, used by its destructor.
struct State {
  std::vector<aclrtStream> streams;  // the streams the runs were queued on (nullptr = default)
  std::vector<Buffer> outputs;
  std::vector<void*> buffers;  // every aclrtMalloc'd pointer, outputs included
  std::vector<aclTensor*> tensors;
  bool stream_destroyed = false;
  bool finalized = false;
  bool late_failure = false;
};

// A call that must fail (an address aclrtMalloc never returned), and its message must say so.
void expect_failure(const char* when) {
  static int bogus;
  const aclError rc = aclrtFree(&bogus);
  const char* msg = aclGetRecentErrMsg();
  if (rc != ACL_ERROR_INVALID_PARAM || msg == nullptr || std::strstr(msg, "aclrtFree") == nullptr) {
    std::fprintf(stderr, "aclnn_exit_program: %s: aclrtFree(bogus) gave %d '%s'\n", when, rc,
                 msg ? msg : "(null)");
    std::_Exit(92);
  }
}

State g_state;
std::mutex g_state_mu;  // the host threads of step "threads" record into g_state

// A user object with static storage duration, built before main (before kvflash's own statics),
// whose destructor runs after main returns and calls acl functions (like a CANN RAII guard).
struct LateCleanup {
  bool armed = false;
  ~LateCleanup() {
    if (!armed) return;
    for (aclrtStream s : g_state.streams) {
      const aclError rc = aclrtSynchronizeStream(s);
      const bool live = s == nullptr || !g_state.stream_destroyed;
      if (live && !g_state.finalized && rc != ACL_SUCCESS) die("late aclrtSynchronizeStream", rc);
    }
    for (const Buffer& out : g_state.outputs) {
      std::vector<uint16_t> host(out.bytes / 2);
      CHECK_ACL(
          aclrtMemcpy(host.data(), out.bytes, out.addr, out.bytes, ACL_MEMCPY_DEVICE_TO_HOST));
      for (uint16_t v : host) {
        if (v != kVBits) {
          std::fprintf(stderr, "aclnn_exit_program: output 0x%04x, want 0x%04x: a run was lost\n",
                       v, kVBits);
          std::_Exit(91);
        }
      }
    }
    if (g_state.late_failure) expect_failure("after main");
    for (aclTensor* t : g_state.tensors) CHECK_ACL(aclDestroyTensor(t));
    for (void* p : g_state.buffers) CHECK_ACL(aclrtFree(p));
    std::fprintf(stderr, "aclnn_exit_program: late cleanup done\n");
  }
};

LateCleanup g_late;

Buffer device_buffer(size_t bytes, int byte) {
  Buffer b;
  b.bytes = bytes;
  CHECK_ACL(aclrtMalloc(&b.addr, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK_ACL(aclrtMemset(b.addr, bytes, byte, bytes));
  std::lock_guard<std::mutex> lock(g_state_mu);
  g_state.buffers.push_back(b.addr);
  return b;
}

aclTensor* tensor(const Buffer& b, std::vector<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  aclTensor* t = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT16, strides.data(), 0,
                                 ACL_FORMAT_ND, shape.data(), shape.size(), b.addr);
  if (t == nullptr) die("aclCreateTensor", -1);
  std::lock_guard<std::mutex> lock(g_state_mu);
  g_state.tensors.push_back(t);
  return t;
}

bool has(const std::vector<std::string>& steps, const char* s) {
  for (const auto& x : steps)
    if (x == s) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <steps> <exit code> [calls] [seq len]\n", argv[0]);
    return 2;
  }
  std::vector<std::string> steps;
  for (const char* p = argv[1]; *p;) {
    const char* e = std::strchr(p, ',');
    steps.emplace_back(p, e ? e - p : std::strlen(p));
    p = e ? e + 1 : p + std::strlen(p);
  }
  const int code = std::atoi(argv[2]);
  const int calls = argc > 3 ? std::atoi(argv[3]) : 6;
  const int64_t S = argc > 4 ? std::atoll(argv[4]) : 4096;
  const int64_t B = 8, N = 32, KVN = 8, D = 128;

  CHECK_ACL(aclInit(nullptr));
  CHECK_ACL(aclrtSetDevice(0));
  aclrtStream created = nullptr;
  const bool on_created = has(steps, "stream") || has(steps, "both");
  const bool on_default = has(steps, "default") || has(steps, "both");
  if (on_created) {
    CHECK_ACL(aclrtCreateStream(&created));
    g_state.streams.push_back(created);
  }
  if (on_default) g_state.streams.push_back(nullptr);
  g_late.armed = has(steps, "static");

  // K and V shared by every run (64 MiB each at the default size): zero K, constant V.
  const Buffer k = device_buffer(static_cast<size_t>(B * S * KVN * D) * 2, 0);
  const Buffer v = device_buffer(static_cast<size_t>(B * S * KVN * D) * 2, kVByte);
  const Buffer q = device_buffer(static_cast<size_t>(B * N * D) * 2, 0);
  aclTensor* key = tensor(k, {B, S, KVN * D});
  aclTensor* value = tensor(v, {B, S, KVN * D});
  aclTensor* query = tensor(q, {B, 1, N * D});
  aclTensorList* keys = aclCreateTensorList(&key, 1);
  aclTensorList* values = aclCreateTensorList(&value, 1);
  char layout[] = "BSH";

  // One run queued on stream s.
  const auto queue_run = [&](aclrtStream s) {
    const Buffer out = device_buffer(static_cast<size_t>(B * N * D) * 2, 0);
    {
      std::lock_guard<std::mutex> lock(g_state_mu);
      g_state.outputs.push_back(out);
    }
    aclTensor* out_t = tensor(out, {B, 1, N * D});
    uint64_t ws_size = 0;
    aclOpExecutor* executor = nullptr;
    CHECK_ACL(aclnnIncreFlashAttentionGetWorkspaceSize(query, keys, values, nullptr, nullptr,
                                                       nullptr, N, 0.088, layout, KVN, out_t,
                                                       &ws_size, &executor));
    void* ws = nullptr;
    if (ws_size > 0) ws = device_buffer(ws_size, 0).addr;
    CHECK_ACL(aclnnIncreFlashAttention(ws, ws_size, executor, s));
  };
  const std::vector<aclrtStream> main_streams = g_state.streams;
  for (int i = 0; i < calls; ++i) {
    for (aclrtStream s : main_streams) queue_run(s);
  }
  if (has(steps, "threads")) {
    std::vector<std::thread> hosts;
    for (int t = 0; t < 3; ++t) {
      hosts.emplace_back([&] {
        aclrtStream s = nullptr;
        CHECK_ACL(aclrtCreateStream(&s));
        {
          std::lock_guard<std::mutex> lock(g_state_mu);
          g_state.streams.push_back(s);
        }
        for (int i = 0; i < calls; ++i) queue_run(s);
      });
    }
    for (std::thread& h : hosts) h.join();
  }
  std::fprintf(stderr, "aclnn_exit_program: %d run(s) queued on %zu stream(s); steps %s\n", calls,
               g_state.streams.size(), argv[1]);

  for (const std::string& step : steps) {
    if (step == "destroy" && on_created) {
      CHECK_ACL(aclrtDestroyStream(created));
      g_state.stream_destroyed = true;
    } else if (step == "reset") {
      CHECK_ACL(aclrtResetDevice(0));
    } else if (step == "finalize") {
      CHECK_ACL(aclFinalize());
      g_state.finalized = true;
    } else if (step == "sync") {
      for (aclrtStream s : g_state.streams) CHECK_ACL(aclrtSynchronizeStream(s));
    } else if (step == "fail") {
      expect_failure("in main");
      g_state.late_failure = true;
    } else if (step == "exit") {
      std::exit(code);
    }
  }
  return code;
}
