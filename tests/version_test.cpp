// The version: the generated header's macros, kvflash_version() and the CMake project VERSION
// (passed in as KVFLASH_PROJECT_VERSION) all agree.
#include "kvflash/version.h"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(Version, MacrosMatchTheProjectVersion) {
  EXPECT_STREQ(KVFLASH_VERSION_STRING, KVFLASH_PROJECT_VERSION);
  const std::string parts = std::to_string(KVFLASH_VERSION_MAJOR) + "." +
                            std::to_string(KVFLASH_VERSION_MINOR) + "." +
                            std::to_string(KVFLASH_VERSION_PATCH);
  EXPECT_EQ(parts, KVFLASH_VERSION_STRING);
  EXPECT_EQ(KVFLASH_VERSION,
            KVFLASH_VERSION_MAJOR * 10000 + KVFLASH_VERSION_MINOR * 100 + KVFLASH_VERSION_PATCH);
  static_assert(KVFLASH_VERSION_MINOR < 100 && KVFLASH_VERSION_PATCH < 100,
                "KVFLASH_VERSION packs minor and patch in two digits each");
}

TEST(Version, LibraryReportsTheHeaderVersion) {
  ASSERT_NE(kvflash_version(), nullptr);
  EXPECT_STREQ(kvflash_version(), KVFLASH_VERSION_STRING);
}

}  // namespace
