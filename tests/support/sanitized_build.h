// Whether this test program was built with AddressSanitizer (CI's sanitizer
// stage runs every CPU test program so). Tests whose cost is in parsing
// megabytes of real data files run a smaller share there: the sanitizer
// stage is for memory errors along each code path, which one case finds,
// while the release stage runs them all.
#pragma once

namespace astrai::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace astrai::test
