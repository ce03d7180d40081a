// Every variant of every kernel case (cuda/kernel_cases/) against its
// reference function, on shapes RapidCheck draws (a failure shrinks to a
// small shape and prints it), within the case's stated tolerance. The
// registry's bench_shapes are timed by bench/bench_cuda.cpp; this file never
// times anything.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "cuda/kernel_cases/kernel_case.h"
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using namespace astrai::cuda::cases;

TEST_CASE("every kernel case matches its reference", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  for (const KernelCase& kc : kernel_cases()) {
    for (int variant = 1; variant <= kc.variants; ++variant) {
      // Short section names (Catch2's console breaks long ones); the rest is logged on failure.
      rc::prop(kc.name + " v" + std::to_string(variant), [&] {
        const Pick pick = [](int lo, int hi) { return *rc::gen::inRange(lo, hi + 1); };
        const KernelShape shape = kc.draw(pick);
        RC_LOG() << kc.kernel << " against " << kc.reference << "\n"
                 << "tolerance " << kc.tolerance(shape.dtype) << ": " << kc.tolerance.why << "\n"
                 << "shape: " << shape.describe() << "\n";
        auto run = kc.prepare(shape);
        run->launch(variant, nullptr);
        const std::string error = test::compare(run->result(), run->expected(), kc.tolerance(shape.dtype));
        RC_ASSERT(error == "");
      });
    }
  }
}

TEST_CASE("the kernel-case registry is complete and well formed", "[cuda][plan]") {
  // Each kernel file of cuda/kernels/ appears in some case, and every case
  // says where its kernel and reference are and why its tolerance holds.
  std::string kernels_named;
  for (const KernelCase& kc : kernel_cases()) {
    INFO(kc.name);
    CHECK_FALSE(kc.reference.empty());
    CHECK_FALSE(kc.tolerance.why.empty());
    CHECK(kc.variants >= 1);
    CHECK_FALSE(kc.bench_shapes.empty());
    kernels_named += kc.kernel + " ";
  }
  for (const char* file : {"convert.cu", "embedding.cu", "residual_rmsnorm.cu", "rope_kv_write.cu", "swiglu.cu",
                           "decode_attention.cu", "prefill_attention.cu", "attention_merge.cu", "gemm.cpp", "matvec.cu",
                           "sample.cu"}) {
    INFO(file);
    CHECK(kernels_named.find(file) != std::string::npos);
  }
}
