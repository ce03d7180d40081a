#include "reference/linear.h"

#include <cblas.h>

#include <stdexcept>
#include <string>

namespace astrai {
namespace {

// OpenBLAS splits a large sgemv across threads, and the split changes how the
// last bits round, so results would depend on the machine's core count; on a
// busy machine the threads also wait on each other (a 288x288 product took
// 100 us instead of 4 us, docs/benchmarks.md). The reference therefore asks
// for one BLAS thread, once, before its first product.
void use_one_blas_thread() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

}  // namespace

xt::xtensor<float, 2> linear(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 2>& W) {
  const size_t rows = x.shape(0), in = x.shape(1), out = W.shape(0);
  if (W.shape(1) != in)
    throw std::invalid_argument("linear: input width " + std::to_string(in) + " does not match weight width " +
                                std::to_string(W.shape(1)));
  use_one_blas_thread();
  xt::xtensor<float, 2> y({rows, out});
  for (size_t r = 0; r < rows; ++r) {
    // y[r] = W x[r]   (W row-major [out, in])
    cblas_sgemv(CblasRowMajor, CblasNoTrans, int(out), int(in), 1.0f, W.data(), int(in), x.data() + r * in, 1, 0.0f,
                y.data() + r * out, 1);
  }
  return y;
}

}  // namespace astrai
