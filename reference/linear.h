// A linear layer: y = x W^T, for a batch of rows.
#pragma once

#include <xtensor/xtensor.hpp>

namespace astrai {

// x: [rows, in], W: [out, in]  ->  y: [rows, out], y[r][o] = sum_i x[r][i] * W[o][i].
//
// Batch invariance: every row is its own BLAS matrix-vector product (sgemv)
// with the same W, so row r gets bit-identical results whatever the other rows
// are and however many there are. A single sgemm over all rows would be faster
// for big batches, but OpenBLAS's sgemm changes its summation order with the
// number of rows (tests/reference/test_linear.cpp shows it), which would make a
// request's tokens depend on what else is batched with it. BLAS runs on one
// thread (see linear.cpp), so the bits are also the same on every machine.
xt::xtensor<float, 2> linear(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 2>& W);

// The same with the e-th matrix of a stack W: [n, out, in] (a Mixture-of-
// Experts layer's experts), read where it lies in the stack.
xt::xtensor<float, 2> linear_slice(const xt::xtensor<float, 2>& x, const xt::xtensor<float, 3>& W, size_t e);

}  // namespace astrai
