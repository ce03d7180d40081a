#include "tests/support/shared_data.h"

#include <cstdlib>
#include <unistd.h>

namespace astrai::test {

// $ASTRAI_SOURCE_ROOT when set: programs built on one machine and run on
// another (bench/gpu-check-pack.sh) find the checkout there.
std::filesystem::path source_root() {
  if (const char* env = std::getenv("ASTRAI_SOURCE_ROOT"); env && *env) return env;
  return ASTRAI_SOURCE_ROOT;
}

std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("ASTRAI_SHARED_DIR"); env && *env) return env;
  return source_root().parent_path() / "shared";
}

bool test_data_required() {
  const char* env = std::getenv("ASTRAI_REQUIRE_TEST_DATA");
  return env && std::string(env) == "1";
}

std::optional<std::filesystem::path> shared_file(const std::string& relative) {
  auto path = shared_dir() / relative;
  if (std::filesystem::exists(path)) return path;
  return std::nullopt;
}

std::filesystem::path scratch_dir() {
  // One folder per process, so test programs running in parallel never collide.
  auto dir = std::filesystem::path(ASTRAI_BUILD_ROOT) / "test-scratch" / std::to_string(getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace astrai::test
