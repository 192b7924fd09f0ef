// Whether the translation unit is compiled with AddressSanitizer (the asan preset): GCC defines
// __SANITIZE_ADDRESS__, clang answers __has_feature(address_sanitizer). For the tests whose
// sanitizer runs can be smaller than their release runs without losing what the sanitizer checks
// (each says why where it uses this).
#pragma once

namespace kvflash::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace kvflash::testing
