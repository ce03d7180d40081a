// Tests read the project's shared reference data (real models, llama2.c golden
// outputs) from ../shared beside the checkout, or from $ASTRAI_SHARED_DIR.
// It is never copied into the repository; when it is absent (a user's fresh
// machine) the tests that need it say what is missing and skip.
#pragma once

#include <filesystem>
#include <optional>
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
std::filesystem::path source_root();

}  // namespace astrai::test

// Binds `var` to the path of a shared file, or skips the rest of the test case
// with a message naming what is missing. Catch2 v2 has no SKIP, so the skip is
// a WARN followed by return: it shows in the output, and the case passes.
#define ASTRAI_REQUIRE_SHARED(var, relative)                                                             \
  const auto var##_found = ::astrai::test::shared_file(relative);                                        \
  if (!var##_found) {                                                                                    \
    WARN("SKIPPED: shared data " << (relative) << " not found under " << ::astrai::test::shared_dir()    \
                                 << " (set ASTRAI_SHARED_DIR to the folder holding models/ and golden/)"); \
    return;                                                                                              \
  }                                                                                                      \
  const std::filesystem::path var = *var##_found
