// The CUDA runtime query: on a machine without a GPU it must say so (and the
// CUDA tests skip); on a GPU machine it must describe device 0.
#include <catch2/catch.hpp>

#include "cuda/device_info.h"
#include "tests/cuda/gpu_test_support.h"

TEST_CASE("the CUDA runtime reports the devices, or why there are none", "[cuda]") {
  const auto info = astrai::cuda::query_devices();
  if (info.device_count == 0) {
    const std::string why = info.error.empty() ? "no device" : info.error;
    std::string listed;
    if (astrai::test::gpu_expected(&listed))
      FAIL("a GPU is present (" << listed << ") but the CUDA runtime finds none: " << why);
    WARN("SKIPPED: no GPU was found (" << why << ")");
    CHECK(info.name.empty());
    return;
  }
  CHECK(!info.name.empty());
  CHECK(info.compute_capability >= 50);
  CHECK(info.memory_bytes > 0);
}
