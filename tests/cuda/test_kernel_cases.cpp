// Every variant of every kernel case (cuda/kernel_cases/) against its
// reference function, on shapes RapidCheck draws (a failure shrinks to a
// small shape and prints it), within the case's stated tolerance. The
// registry's bench_shapes are timed by bench/bench_cuda.cpp; this file never
// times anything. It also holds the registry to the folder: every kernel file
// of cuda/kernels/ must have a case.
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "cuda/kernel_cases/kernel_case.h"
#include "tests/cuda/gpu_test_support.h"
#include "tests/support/shared_data.h"

using namespace astrai;
using namespace astrai::cuda::cases;

TEST_CASE("every kernel case matches its reference", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  const char* only = std::getenv("ASTRAI_KERNEL_CASE");  // one case by name, while working on it
  for (const KernelCase& kc : kernel_cases()) {
    if (only && kc.name != only) continue;
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
        const std::string error = run->check(kc.tolerance(shape.dtype));
        RC_LOG() << "check: " << (error.empty() ? "passed" : error) << "\n";
        RC_ASSERT(error == "");
      });
    }
  }
}

namespace {

// Kernel files with no case of their own, each with the reason. Empty: every
// kernel has one (adjust_logits.cu and row_logprobs.cu were missing until
// this list came from the folder instead of a hand-kept copy of it).
const std::map<std::string, std::string> kWithoutCase = {};

// The file names of cuda/kernels/*.cu, read from the source tree when the test
// runs, so a kernel added since the build was configured is seen too.
std::set<std::string> kernel_files() {
  const std::filesystem::path dir = test::source_root() / "cuda" / "kernels";
  std::set<std::string> names;
  if (std::filesystem::is_directory(dir))
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.path().extension() == ".cu") names.insert(entry.path().filename().string());
  return names;
}

// The .cu file names a case's `kernel` text names: "cuda/kernels/a.cu, b.cu
// (cuda/paged_attention.cpp)" names a.cu and b.cu.
std::set<std::string> named_kernel_files(const std::string& text) {
  std::set<std::string> names;
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t end = text.find(".cu"); end != std::string::npos; end = text.find(".cu", end + 1)) {
    if (end + 3 < text.size() && word(text[end + 3])) continue;  // ".cuh", ".cupy"
    size_t begin = end;
    while (begin > 0 && word(text[begin - 1])) --begin;
    names.insert(text.substr(begin, end + 3 - begin));
  }
  return names;
}

}  // namespace

TEST_CASE("a case's kernel text names its .cu files", "[cuda][plan]") {
  CHECK(named_kernel_files("cuda/kernels/sample.cu") == std::set<std::string>{"sample.cu"});
  CHECK(named_kernel_files("cuda/kernels/decode_attention.cu, prefill_attention.cu, attention_merge.cu "
                           "(cuda/paged_attention.cpp)") ==
        std::set<std::string>{"decode_attention.cu", "prefill_attention.cu", "attention_merge.cu"});
  CHECK(named_kernel_files("cuda/gemm.cpp (mat-vec or cuBLASLt)").empty());
  CHECK(named_kernel_files("cuda/kernels/launch.cuh").empty());
}

TEST_CASE("the kernel-case registry is complete and well formed", "[cuda][plan]") {
  // Every case says where its kernel and reference are and why its tolerance holds.
  std::set<std::string> named;
  for (const KernelCase& kc : kernel_cases()) {
    INFO(kc.name);
    CHECK_FALSE(kc.reference.empty());
    CHECK_FALSE(kc.tolerance.why.empty());
    CHECK(kc.variants >= 1);
    CHECK_FALSE(kc.bench_shapes.empty());
    for (const std::string& file : named_kernel_files(kc.kernel)) named.insert(file);
  }
  // Every kernel file of cuda/kernels/ has a case (or a stated reason), and
  // every file a case names exists.
  const std::set<std::string> files = kernel_files();
  INFO("kernel files under " << (test::source_root() / "cuda" / "kernels"));
  REQUIRE(files.size() >= 12);  // the folder was found: 12 kernel files when this test was written
  for (const std::string& file : files) {
    INFO(file << " has no kernel case: add one in cuda/kernel_cases/ (tests/cuda/README.md, 'Adding a kernel')");
    CHECK((named.count(file) == 1 || kWithoutCase.count(file) == 1));
  }
  for (const std::string& file : named) {
    INFO("a case names " << file << ", which is not in cuda/kernels/");
    CHECK(files.count(file) == 1);
  }
  for (const auto& [file, why] : kWithoutCase) {
    INFO(file << " is excused (" << why << ") but has a case, or no longer exists");
    CHECK((files.count(file) == 1 && named.count(file) == 0 && !why.empty()));
  }
}


TEST_CASE("attention merges rows of many splits at every head dim (fixed shapes)", "[cuda]") {
  // The drawn shapes above rarely give a row more splits than the merge has
  // groups of threads (attention_merge.cu's vector kernel: 2 groups at
  // head_dim 256 to 64 at 8): here decode rows of 600 positions in splits of
  // one tile (16 splits, the executor's most at this length) at each head
  // dim of the draw, with and without sinks, so a merge that drops a group's
  // splits (or the scalar kernel's at 146) fails.
  ASTRAI_REQUIRE_GPU();
  const KernelCase kc = paged_attention_case();
  for (const int head_dim : {8, 64, 128, 146, 256})
    for (const int sinks : {0, 1}) {
      const KernelShape shape{cuda::DType::Float32, uint32_t(head_dim + sinks),
                              {{"head_dim", head_dim}, {"n_kv", 1}, {"ratio", 2}, {"n_seqs", 2}, {"len", 600},
                               {"ragged", 0}, {"fresh", 1}, {"page", 16}, {"split", 32}, {"splits", 0},
                               {"chunk", 256}, {"window", 0}, {"sinks", sinks}}};
      INFO(shape.describe());
      auto run = kc.prepare(shape);
      run->launch(1, nullptr);
      CHECK(run->check(kc.tolerance(shape.dtype)) == "");
    }
}

TEST_CASE("the MoE case on fixed gpt-oss and Qwen 3 MoE shapes with rows on both sides of the fused down launch",
          "[cuda]") {
  // The drawn shapes are small: with gpt-oss's clamp at 1 most of a tiny
  // shape's gate/up values are clamped, and a bias the fused kernels forgot
  // can leave every output unchanged. These shapes have thousands of outputs
  // (aligned and ragged widths, 1 to 24 rows: the fused down-and-sum launch up
  // to kMoeDownCombineRows, the grouped one above), so an omitted bias, clamp
  // or weight shows in the bit comparison of v1 against v2 (check()).
  ASTRAI_REQUIRE_GPU();
  const KernelCase kc = moe_case();
  for (const auto dtype : {cuda::DType::Float32, cuda::DType::BFloat16})
    for (const int gpt_oss : {0, 1})
      for (const int rows : {1, 3, 24})
        for (const auto& [hidden, dim] : {std::pair{40, 64}, std::pair{37, 70}}) {
          const KernelShape shape{dtype, uint32_t(rows * 7 + hidden + gpt_oss),
                                  {{"rows", rows}, {"experts", 8}, {"k", 4}, {"hidden", hidden}, {"dim", dim},
                                   {"routing", gpt_oss ? 2 : 1}, {"ties", 0}, {"shared", 1 - gpt_oss},
                                   {"gpt_oss", gpt_oss}}};
          INFO(shape.describe());
          auto run = kc.prepare(shape);
          run->launch(1, nullptr);
          CHECK(run->check(kc.tolerance(shape.dtype)) == "");
        }
}
