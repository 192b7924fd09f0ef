// Holds an aclnn stream's queue until release(): what is queued behind it (copies, operators)
// runs in stream order afterwards, so a test controls exactly when device data becomes valid.
#pragma once

#include <gtest/gtest.h>

#include <future>

#include "acl/acl_base.h"
#include "hooks/aclnn_enqueue.hpp"

namespace kvflash::testing {

class StreamGate {
 public:
  explicit StreamGate(aclrtStream stream) {
    EXPECT_EQ(kvflash::aclnn::enqueue("gate", stream,
                                      [f = opened_.get_future().share()] {
                                        f.wait();
                                        return kvflash::Status::kSuccess;
                                      }),
              kvflash::Status::kSuccess);
  }
  ~StreamGate() { release(); }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void release() {
    if (!released_) opened_.set_value();
    released_ = true;
  }

 private:
  std::promise<void> opened_;
  bool released_ = false;
};

}  // namespace kvflash::testing
