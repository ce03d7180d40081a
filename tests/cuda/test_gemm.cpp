// The GEMM runner's algorithm choice (cuda/gemm.h): a row's result has the
// same bits whatever the number of rows around it (batch-invariant mode) or
// within its row-count bucket (the default), and each bucket runs the
// algorithm chosen for it. Its agreement with linear() of reference/linear.cpp
// is the "gemm" kernel case (test_kernel_cases.cpp).
#include <catch2/catch.hpp>

#include "cuda/gemm.h"
#ifdef ASTRAI_CUDA_EMULATED
#include "cuda/emulation/emulated_device.h"
#endif
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using cuda::DType;

TEST_CASE("batch-invariant GEMMs: a row has the same bits whatever the number of rows", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  cuda::GemmRunner gemm(cuda::GemmAlgorithms::OnePerShape);
  for (const DType t : {DType::Float32, DType::BFloat16}) {
    const int in = 512, out = 1376;
    const auto w = test::random_values(size_t(out) * size_t(in), 7, t);
    const auto d_w = test::upload(w, t);
    std::vector<float> first_row_alone;
    for (const int rows : {1, 2, 3, 8, 17, 64, 100, 256}) {
      const auto x = test::random_values(size_t(rows) * size_t(in), 11, t);  // row 0 is the same every time
      const auto d_x = test::upload(x, t);
      auto d_y = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
      gemm.run(d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), nullptr);
      const auto y = test::download(d_y, size_t(out), DType::Float32);
      if (rows == 1) first_row_alone = y;
      INFO(cuda::dtype_name(t) << ", " << rows << " rows; " << gemm.invariance_note());
      // Exact only because GemmRunner keeps one algorithm per weight shape; where
      // cuBLASLt cannot, batch_invariant() is false and says why (cuda/gemm.h).
      CHECK(y == first_row_alone);
    }
    CHECK(gemm.batch_invariant());
  }
}

TEST_CASE("per-bucket GEMMs: a row has the same bits for every row count of its bucket", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  cuda::GemmRunner gemm;  // PerRowBucket, the default
  CHECK_FALSE(gemm.batch_invariant());
  const DType t = DType::BFloat16;
  const int in = 256, out = 384;
  const auto d_w = test::upload(test::random_values(size_t(out) * size_t(in), 3, t), t);
  for (const auto& bucket : std::vector<std::vector<int>>{{1, 7, 33, 64}, {65, 100, 128}, {300, 512}}) {
    std::vector<float> first_row;
    for (const int rows : bucket) {
      const auto d_x = test::upload(test::random_values(size_t(rows) * size_t(in), 5, t), t);  // row 0 the same
      auto d_y = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
      gemm.run(d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), nullptr);
      const auto y = test::download(d_y, size_t(out), DType::Float32);
      if (first_row.empty()) first_row = y;
      INFO(rows << " rows, bucket of " << cuda::GemmRunner::algorithm_rows(rows, gemm.choice()));
      // Exact: one algorithm per bucket, without split-K (cuda/gemm.h).
      CHECK(y == first_row);
    }
  }
}

TEST_CASE("each row count gets the algorithm chosen for its bucket, not the decode step's", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  CHECK(cuda::GemmRunner::algorithm_rows(1, cuda::GemmAlgorithms::PerRowBucket) == 64);
  CHECK(cuda::GemmRunner::algorithm_rows(64, cuda::GemmAlgorithms::PerRowBucket) == 64);
  CHECK(cuda::GemmRunner::algorithm_rows(65, cuda::GemmAlgorithms::PerRowBucket) == 128);
  CHECK(cuda::GemmRunner::algorithm_rows(2000, cuda::GemmAlgorithms::PerRowBucket) == 2048);
  CHECK(cuda::GemmRunner::algorithm_rows(100000, cuda::GemmAlgorithms::PerRowBucket) == 4096);
  CHECK(cuda::GemmRunner::algorithm_rows(2000, cuda::GemmAlgorithms::OnePerShape) == 64);
#ifdef ASTRAI_CUDA_EMULATED
  // The emulated cuBLASLt tags each algorithm with the row count its heuristic
  // was asked about: the GEMM that ran must carry its bucket's.
  const int in = 32, out = 48;
  const auto d_w = test::upload(test::random_values(size_t(out) * size_t(in), 3, DType::Float32), DType::Float32);
  for (const auto choice : {cuda::GemmAlgorithms::PerRowBucket, cuda::GemmAlgorithms::OnePerShape}) {
    cuda::GemmRunner gemm(choice);
    for (const int rows : {1, 64, 65, 700, 2000, 5000}) {
      const auto d_x = test::upload(std::vector<float>(size_t(rows) * size_t(in), 0.5f), DType::Float32);
      auto d_y = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
      gemm.run(d_x.get(), d_w.get(), DType::Float32, rows, in, out, d_y.as<float>(), nullptr);
      INFO(rows << " rows");
      const int64_t want = choice == cuda::GemmAlgorithms::OnePerShape ? 64 : rows <= 64 ? 64 : rows <= 128 ? 128
                           : rows <= 1024 ? 1024 : rows <= 2048 ? 2048 : 4096;
      CHECK(emu::last_matmul_algorithm_rows() == want);
    }
  }
#endif
}
