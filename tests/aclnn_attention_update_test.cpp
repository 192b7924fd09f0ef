// aclnnAttentionUpdate through the C API: the merge of sp parts in separate tensors against the
// fp64 oracle (kvflash/merge.hpp's list form) for every localOut dtype, with and without lseOut,
// the updateType rules, null and invalid arguments with *executor = nullptr.
#include "aclnnop/aclnn_attention_update.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "core/half.hpp"
#include "merge_reference.hpp"
#include "support/acl_tensors.hpp"
#include "support/test_rng.hpp"

namespace {

using kvflash::DType;
using kvflash::MergeArgs;
using kvflash::TensorView;
using kvflash::testing::AclTensors;

aclOpExecutor* const kSentinel = reinterpret_cast<aclOpExecutor*>(uintptr_t{0xdead0});
std::string recent() { return aclGetRecentErrMsg(); }

// sp parts of [rows, dim] in separate buffers (part 1 empty in every 4th row, all parts empty in
// row 0), lse in fp32.
struct Parts {
  Parts(int64_t sp, int64_t rows, int64_t dim, DType dt) : dtype(dt) {
    kvflash::testing::TestRng rng(sp * 1000 + rows * 10 + dim);
    const auto es = static_cast<int64_t>(kvflash::dtype_size(dt));
    for (int64_t k = 0; k < sp; ++k) {
      outs.emplace_back(static_cast<size_t>(rows * dim * es));
      lses.emplace_back(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows * dim; ++i) {
        const float x = static_cast<float>(rng.normal());
        if (dt == DType::kFloat32) {
          std::memcpy(outs[k].data() + i * 4, &x, 4);
        } else {
          const uint16_t h = dt == DType::kBFloat16 ? kvflash::core::float_to_bf16(x)
                                                    : kvflash::core::float_to_fp16(x);
          std::memcpy(outs[k].data() + i * 2, &h, 2);
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const bool empty = r == 0 || (k == 1 && r % 4 == 1);
        lses[k][r] = empty ? -std::numeric_limits<float>::infinity()
                           : static_cast<float>(4.0 * rng.normal());
      }
    }
    out.assign(static_cast<size_t>(rows * dim * es), 0xff);
    lse_out.assign(static_cast<size_t>(rows), std::nanf(""));
    for (int64_t k = 0; k < sp; ++k) {
      args.partial_out_list.push_back(TensorView::contiguous(outs[k].data(), dt, {rows, dim}));
      args.partial_lse_list.push_back(
          TensorView::contiguous(lses[k].data(), DType::kFloat32, {rows}));
    }
    args.out = TensorView::contiguous(out.data(), dt, {rows, dim});
    args.out_lse = TensorView::contiguous(lse_out.data(), DType::kFloat32, {rows});
  }
  DType dtype;
  std::vector<std::vector<uint8_t>> outs;
  std::vector<std::vector<float>> lses;
  std::vector<uint8_t> out;
  std::vector<float> lse_out;
  MergeArgs args;
};

struct Call {
  explicit Call(const MergeArgs& a, int64_t update_type) : type(update_type) {
    lse = t.list(a.partial_lse_list);
    local_out = t.list(a.partial_out_list);
    out = t.make(a.out);
    lse_out = update_type == 1 ? t.make(*a.out_lse) : nullptr;
  }
  aclnnStatus phase1(uint64_t* ws, aclOpExecutor** ex) {
    return aclnnAttentionUpdateGetWorkspaceSize(lse, local_out, type, out, lse_out, ws, ex);
  }
  aclError run() {
    uint64_t size = 0;
    aclOpExecutor* ex = nullptr;
    const aclnnStatus s = phase1(&size, &ex);
    if (s != ACLNN_SUCCESS) return s;
    std::vector<std::byte> ws(size);
    const aclnnStatus s2 = aclnnAttentionUpdate(ws.data(), size, ex, nullptr);
    if (s2 != ACLNN_SUCCESS) return s2;
    return aclrtSynchronizeStream(nullptr);
  }
  AclTensors t;
  int64_t type;
  aclTensorList *lse, *local_out;
  aclTensor *out, *lse_out;
};

double load(const std::vector<uint8_t>& buf, DType dt, int64_t i) {
  if (dt == DType::kFloat32) {
    float x;
    std::memcpy(&x, buf.data() + i * 4, 4);
    return x;
  }
  uint16_t h;
  std::memcpy(&h, buf.data() + i * 2, 2);
  return dt == DType::kBFloat16 ? kvflash::core::bf16_to_float(h) : kvflash::core::fp16_to_float(h);
}

TEST(AclnnAttentionUpdate, MatchesTheReference) {
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int64_t type : {0, 1}) {
      for (int64_t sp : {1, 2, 5}) {
        const int64_t rows = 37, dim = 64;
        Parts p(sp, rows, dim, dt);
        const auto ref = kvflash::reference::merge_reference(p.args);
        Call call(p.args, type);
        ASSERT_EQ(call.run(), ACL_SUCCESS) << recent();
        const double rtol = dt == DType::kFloat32   ? 0x1p-20
                            : dt == DType::kFloat16 ? 0x1p-10
                                                    : 0x1p-7;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t d = 0; d < dim; ++d) {
            const double want = ref.out[r * dim + d], got = load(p.out, dt, r * dim + d);
            ASSERT_LE(std::fabs(got - want), rtol * (std::fabs(want) + ref.out_absmax[r]) + 1e-30)
                << "sp=" << sp << " r=" << r << " d=" << d;
          }
          if (type == 1) {
            const double want = ref.lse[r], got = p.lse_out[r];
            if (std::isinf(want)) {
              ASSERT_EQ(got, want) << r;
            } else {
              ASSERT_LE(std::fabs(got - want), 0x1p-18 * (1 + std::fabs(want))) << r;
            }
          } else {
            ASSERT_TRUE(std::isnan(p.lse_out[r]));  // not written
          }
        }
        for (int64_t d = 0; d < dim; ++d) ASSERT_EQ(load(p.out, dt, d), 0.0);  // row 0: all empty
      }
    }
  }
}

TEST(AclnnAttentionUpdate, RulesAndNullArguments) {
  Parts p(2, 8, 16, DType::kFloat32);
  struct Bad {
    const char* what;
    void (*set)(Call&);
    aclnnStatus status;
    const char* message;
  };
  const Bad bads[] = {
      {"type 2", [](Call& c) { c.type = 2; }, ACLNN_ERR_PARAM_INVALID, "updateType must be 0"},
      {"lseOut with 0", [](Call& c) { c.type = 0; }, ACLNN_ERR_PARAM_INVALID,
       "lseOut must be null with updateType 0"},
      {"no lseOut with 1", [](Call& c) { c.lse_out = nullptr; }, ACLNN_ERR_PARAM_INVALID,
       "lseOut is required with updateType 1"},
      {"null lse", [](Call& c) { c.lse = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, "lse"},
      {"null localOut", [](Call& c) { c.local_out = nullptr; }, ACLNN_ERR_PARAM_NULLPTR,
       "localOut"},
      {"null out", [](Call& c) { c.out = nullptr; }, ACLNN_ERR_PARAM_NULLPTR, "out"},
  };
  for (const Bad& b : bads) {
    Call call(p.args, 1);
    b.set(call);
    uint64_t ws = 0;
    aclOpExecutor* ex = kSentinel;
    EXPECT_EQ(call.phase1(&ws, &ex), b.status) << b.what;
    EXPECT_EQ(ex, nullptr) << b.what;
    EXPECT_NE(recent().find(b.message), std::string::npos) << b.what << ": " << recent();
  }
  // out keeps localOut's dtype; the lists must be equally long.
  MergeArgs a = p.args;
  a.out.dtype = DType::kFloat16;
  Call c1(a, 0);
  uint64_t ws = 0;
  aclOpExecutor* ex = kSentinel;
  EXPECT_EQ(c1.phase1(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("out dtype (fp16) must be localOut's (fp32)"), std::string::npos);
  a = p.args;
  a.partial_lse_list.pop_back();
  Call c2(a, 0);
  EXPECT_EQ(c2.phase1(&ws, &ex), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("partial_lse_list must hold as many tensors"), std::string::npos)
      << recent();
}

}  // namespace
