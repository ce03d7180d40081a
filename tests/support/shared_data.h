// Tests read the project's shared reference data (real models, llama2.c golden
// outputs) from ../shared beside the checkout, or from $ASTRAI_SHARED_DIR.
// It is never copied into the repository; when it is absent (a user's fresh
// machine) the tests that need it say what is missing and skip.
#pragma once

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

namespace astrai::test {

// The shared data folder: $ASTRAI_SHARED_DIR if set, else <source root>/../shared.
std::filesystem::path shared_dir();
// shared_dir() / relative if that file exists.
std::optional<std::filesystem::path> shared_file(const std::string& relative);
// A folder for files a test writes (inside the build tree), created on demand.
std::filesystem::path scratch_dir();
// The repository root (for golden/ files committed with the code).
std::filesystem::path source_root();  // $ASTRAI_SOURCE_ROOT, else the checkout built from
// Whether a test whose data or oracle is missing must fail rather than skip:
// ASTRAI_REQUIRE_TEST_DATA=1, which scripts/build-and-test.sh sets under CI
// (CI installs every oracle and has ../shared: a skip there is a hole).
bool test_data_required();

}  // namespace astrai::test

// Says that what a test needs (streamed into the message) is missing: a skip
// ("SKIPPED: ..." as a WARN, the caller then returns) on a developer's
// machine, a FAIL where test_data_required().
#define ASTRAI_MISSING(message)                                                                        \
  do {                                                                                                 \
    std::ostringstream astrai_missing_;                                                                \
    astrai_missing_ << message;                                                                        \
    if (::astrai::test::test_data_required())                                                          \
      FAIL("missing, and ASTRAI_REQUIRE_TEST_DATA=1 forbids skipping: " << astrai_missing_.str());     \
    WARN("SKIPPED: " << astrai_missing_.str());                                                        \
  } while (0)

namespace astrai::test {

}  // namespace astrai::test

// Binds `var` to the path of a shared file, or skips the rest of the test case
// with a message naming what is missing. Catch2 v2 has no SKIP, so the skip is
// a WARN followed by return: it shows in the output, and the case passes.
#define ASTRAI_REQUIRE_SHARED(var, relative)                                                             \
  const auto var##_found = ::astrai::test::shared_file(relative);                                        \
  if (!var##_found) {                                                                                    \
    ASTRAI_MISSING("shared data " << (relative) << " not found under " << ::astrai::test::shared_dir() \
                                  << " (set ASTRAI_SHARED_DIR to the folder holding models/ and golden/)"); \
    return;                                                                                              \
  }                                                                                                      \
  const std::filesystem::path var = *var##_found
