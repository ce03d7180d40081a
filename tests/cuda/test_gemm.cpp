// The GEMM runner's routes and algorithm choice (cuda/gemm.h): a row's result
// has the same bits whatever the number of rows around it (batch-invariant
// mode) or within its row-count bucket (the default), and each bucket runs
// the algorithm chosen for it. The mat-vec kernel of 1-8 rows against a
// float64 dot product with an error bound derived below. Agreement with
// linear() of reference/linear.cpp is the "gemm" and "matvec" kernel cases
// (test_kernel_cases.cpp).
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "cuda/gemm.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/kernels/kernels.h"
#ifdef ASTRAI_CUDA_EMULATED
#include "cuda/emulation/emulated_device.h"
#endif
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using cuda::DType;

namespace {

// "" when every y[r, j] is within the worst-case rounding error of a float32
// dot product from the float64 one, else the first element that is not. Any
// order of summing k products with float32 roundings (fmaf or not) errs by
// at most gamma_k * sum_i |x_i w_i|, gamma_k = k u / (1 - k u), u = 2^-24
// (Higham, Accuracy and Stability of Numerical Algorithms, 3.1): the inputs
// are exact floats (bf16 values widen exactly), so that is the whole error.
// Dropping a term or reading a wrong one moves the sum by about
// sum |x w| / k, far beyond gamma_k sum |x w| ~ k 6e-8 sum |x w| at k <= 700.
// NaN fails (the comparison is written so that it cannot pass).
std::string check_against_float64(const std::vector<float>& x, const std::vector<float>& w, int rows, int in, int out,
                                  const std::vector<float>& y) {
  const double u = std::ldexp(1.0, -24), gamma = in * u / (1.0 - in * u);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < out; ++j) {
      double dot = 0.0, magnitude = 0.0;
      for (int k = 0; k < in; ++k) {
        const double p = double(x[size_t(r) * size_t(in) + size_t(k)]) * double(w[size_t(j) * size_t(in) + size_t(k)]);
        dot += p;  // exact enough: float products are exact in double, 700 of them add with u_64 error
        magnitude += std::fabs(p);
      }
      const float got = y[size_t(r) * size_t(out) + size_t(j)];
      const double bound = gamma * magnitude + 1e-30;
      if (!(std::fabs(double(got) - dot) <= bound)) {
        std::ostringstream why;
        why << "y[" << r << ", " << j << "] = " << got << ", float64 " << dot << ", bound " << bound;
        return why.str();
      }
    }
  return "";
}

}  // namespace

TEST_CASE("the mat-vec kernel is within float32's dot-product error of float64", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  rc::prop("matvec vs float64", [] {
    const DType t = *rc::gen::inRange(0, 2) ? DType::BFloat16 : DType::Float32;
    const int rows = *rc::gen::inRange(1, cuda::kMatvecMaxRows + 1);
    // k multiple of 16 bytes (the vector loads) or ragged (the tail); up to 8 bf16 x 32 lanes x 2 and beyond.
    const int in = *rc::gen::oneOf(rc::gen::map(rc::gen::inRange(1, 90), [](int c) { return 8 * c; }),
                                   rc::gen::inRange(1, 701));
    const int out = *rc::gen::inRange(1, 70);
    const int shift = *rc::gen::inRange(0, 2);  // 1: x starts one element past 16 bytes (the unaligned path)
    const auto seed = *rc::gen::inRange(0, 1 << 30);
    RC_LOG() << cuda::dtype_name(t) << " rows=" << rows << " in=" << in << " out=" << out << " shift=" << shift;
    const auto x = test::random_values(size_t(rows) * size_t(in), uint64_t(seed), t);
    const auto w = test::random_values(size_t(out) * size_t(in), uint64_t(seed) + 1, t);
    std::vector<float> x_shifted(size_t(shift), 0.0f);
    x_shifted.insert(x_shifted.end(), x.begin(), x.end());
    const auto d_x = test::upload(x_shifted, t);
    const auto d_w = test::upload(w, t);
    auto d_y = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
    cuda::launch_matvec(static_cast<const char*>(d_x.get()) + size_t(shift) * cuda::dtype_size(t), d_w.get(), t,
                        rows, in, out, d_y.as<float>(), out, nullptr);
    const auto y = test::download(d_y, size_t(rows) * size_t(out), DType::Float32);
    RC_ASSERT(check_against_float64(x, w, rows, in, out, y) == "");
  });
}

TEST_CASE("the mat-vec kernel gives a row the same bits for 1 to 8 rows", "[cuda]") {
  // Exact: row r's sum is the same chain of fmaf's and the same lane tree
  // whatever the number of rows (matvec.cu).
  ASTRAI_REQUIRE_GPU();
  for (const DType t : {DType::Float32, DType::BFloat16})
    for (const int in : {512, 299}) {
      const int out = 77;
      const auto d_w = test::upload(test::random_values(size_t(out) * size_t(in), 21, t), t);
      std::vector<float> first_row;
      for (int rows = 1; rows <= cuda::kMatvecMaxRows; ++rows) {
        const auto d_x = test::upload(test::random_values(size_t(rows) * size_t(in), 23, t), t);  // row 0 the same
        auto d_y = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
        cuda::launch_matvec(d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), out, nullptr);
        const auto y = test::download(d_y, size_t(out), DType::Float32);
        if (rows == 1) first_row = y;
        INFO(cuda::dtype_name(t) << ", in " << in << ", " << rows << " rows");
        CHECK(y == first_row);
      }
    }
}

TEST_CASE("the fused mat-vec gives the bits of the separate norm and mat-vec and residual add", "[cuda]") {
  // Exact by construction (matvec.cu, rms_row.cuh): the prologue reduces a
  // row's sum of squares over the same 256 threads in residual_rmsnorm.cu's
  // element order and tree, scales each element by the same expression and
  // rounds it to the dtype as the norm kernel stores it; the epilogue adds
  // (sum + bias) to y with one float addition, as the norm kernel adds its
  // delta. So the executor may fuse at any row count of the mat-vec without
  // changing a token. Variant 1 of the matvec_fused case is the fused launch,
  // variant 2 the separate ones.
  ASTRAI_REQUIRE_GPU();
  const cuda::cases::KernelCase* fused = nullptr;
  for (const auto& c : cuda::cases::kernel_cases())
    if (c.name == "matvec_fused") fused = &c;
  REQUIRE(fused != nullptr);
  rc::prop("fused vs separate", [fused] {
    const cuda::cases::KernelShape shape =
        fused->draw([](int lo, int hi) { return *rc::gen::resize(100, rc::gen::inRange(lo, hi + 1)); });
    RC_LOG() << shape.describe();
    auto run = fused->prepare(shape);
    run->launch(1, nullptr);
    const std::vector<float> one = run->result();
    run->launch(2, nullptr);
    const std::vector<float> two = run->result();
    RC_ASSERT(one.size() == two.size());
    for (size_t i = 0; i < one.size(); ++i) RC_ASSERT(std::memcmp(&one[i], &two[i], sizeof(float)) == 0);
  });
}

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
    INFO(cuda::dtype_name(t) << ": " << gemm.invariance_note());
    CHECK(gemm.batch_invariant());
  }
}

#ifdef ASTRAI_CUDA_EMULATED
TEST_CASE("batch-invariant GEMMs when every heuristic candidate splits K: the split count is set to one", "[cuda]") {
  // The H200's heuristic offered only split-K algorithms for the test above's
  // shapes; the runner then takes the best one unsplit. The emulated
  // cuBLASLt plays that heuristic.
  struct OnlySplitK {
    OnlySplitK() { emu::heuristic_offers_only_split_k(true); }
    ~OnlySplitK() { emu::heuristic_offers_only_split_k(false); }
  } only_split_k;
  const int in = 40, out = 24;
  const auto d_w = test::upload(test::random_values(size_t(out) * size_t(in), 5, DType::Float32), DType::Float32);
  cuda::GemmRunner gemm(cuda::GemmAlgorithms::OnePerShape);
  for (const int rows : {1, 3, 64, 100}) {
    const auto d_x = test::upload(test::random_values(size_t(rows) * size_t(in), 6, DType::Float32), DType::Float32);
    auto d_y = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
    gemm.run(d_x.get(), d_w.get(), DType::Float32, rows, in, out, d_y.as<float>(), nullptr);
    INFO(rows << " rows; " << gemm.invariance_note());
    CHECK(emu::last_matmul_split_k() == 1);
    CHECK(emu::last_matmul_algorithm_rows() == 64);
  }
  CHECK(gemm.batch_invariant());
  // The per-bucket runner may split K for 9-64 rows: it keeps the heuristic's split.
  cuda::GemmRunner buckets;
  const auto d_x = test::upload(test::random_values(size_t(20) * size_t(in), 6, DType::Float32), DType::Float32);
  auto d_y = test::nan_filled(size_t(20) * size_t(out), DType::Float32);
  buckets.run(d_x.get(), d_w.get(), DType::Float32, 20, in, out, d_y.as<float>(), nullptr);
  CHECK(emu::last_matmul_split_k() == 4);
}
#endif

TEST_CASE("per-bucket GEMMs: a row has the same bits for every row count of its bucket", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  cuda::GemmRunner gemm;  // PerRowBucket, the default
  CHECK_FALSE(gemm.batch_invariant());
  const DType t = DType::BFloat16;
  const int in = 256, out = 384;
  const auto d_w = test::upload(test::random_values(size_t(out) * size_t(in), 3, t), t);
  for (const auto& bucket : std::vector<std::vector<int>>{{1, 5, 8}, {9, 33, 64}, {65, 100, 128}, {300, 512}}) {
    std::vector<float> first_row;
    for (const int rows : bucket) {
      const auto d_x = test::upload(test::random_values(size_t(rows) * size_t(in), 5, t), t);  // row 0 the same
      auto d_y = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
      gemm.run(d_x.get(), d_w.get(), t, rows, in, out, d_y.as<float>(), nullptr);
      const auto y = test::download(d_y, size_t(out), DType::Float32);
      if (first_row.empty()) first_row = y;
      INFO(rows << " rows, bucket of " << cuda::GemmRunner::algorithm_rows(rows, gemm.choice()));
      // Exact: the mat-vec's fixed order for 1-8 rows; above, one algorithm per
      // bucket whose split count (9-64) or absence of split-K is fixed, with an
      // ordered reduction (cuda/gemm.h).
      CHECK(y == first_row);
    }
  }
}

TEST_CASE("each row count gets the algorithm chosen for its bucket, not the decode step's", "[cuda]") {
  ASTRAI_REQUIRE_GPU();
  using Route = cuda::GemmRunner::Route;
  CHECK(cuda::GemmRunner::route(1, cuda::GemmAlgorithms::PerRowBucket) == Route::Matvec);
  CHECK(cuda::GemmRunner::route(8, cuda::GemmAlgorithms::PerRowBucket) == Route::Matvec);
  CHECK(cuda::GemmRunner::route(9, cuda::GemmAlgorithms::PerRowBucket) == Route::CublasLtSplitK);
  CHECK(cuda::GemmRunner::route(64, cuda::GemmAlgorithms::PerRowBucket) == Route::CublasLtSplitK);
  CHECK(cuda::GemmRunner::route(65, cuda::GemmAlgorithms::PerRowBucket) == Route::CublasLt);
  CHECK(cuda::GemmRunner::route(1, cuda::GemmAlgorithms::OnePerShape) == Route::CublasLt);
  CHECK(cuda::GemmRunner::route(64, cuda::GemmAlgorithms::OnePerShape) == Route::CublasLt);
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
    for (const int rows : {1, 8, 9, 64, 65, 700, 2000, 5000}) {
      const auto d_x = test::upload(std::vector<float>(size_t(rows) * size_t(in), 0.5f), DType::Float32);
      auto d_y = test::nan_filled(size_t(rows) * size_t(out), DType::Float32);
      const uint64_t launches = emu::counters().kernel_launches;
      gemm.run(d_x.get(), d_w.get(), DType::Float32, rows, in, out, d_y.as<float>(), nullptr);
      INFO(rows << " rows");
      // The mat-vec is one kernel launch; the emulated cuBLASLt runs as host work, no kernel.
      const bool matvec = choice == cuda::GemmAlgorithms::PerRowBucket && rows <= cuda::kMatvecMaxRows;
      CHECK(emu::counters().kernel_launches - launches == (matvec ? 1u : 0u));
      if (matvec) continue;
      const int64_t want = choice == cuda::GemmAlgorithms::OnePerShape ? 64 : rows <= 64 ? 64 : rows <= 128 ? 128
                           : rows <= 1024 ? 1024 : rows <= 2048 ? 2048 : 4096;
      CHECK(emu::last_matmul_algorithm_rows() == want);
    }
  }
#endif
}
