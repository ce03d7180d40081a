#include "engine/model_files/rope_layout.h"

#include <xtensor/xview.hpp>

namespace astrai {

namespace {

// Position in adjacent-pairs order of the head dimension that sits at `d` in
// rotate-half order: the first half's i goes to 2i, the second half's i to 2i + 1.
size_t adjacent_index(size_t d, size_t head_dim) {
  const size_t half = head_dim / 2;
  return d < half ? 2 * d : 2 * (d - half) + 1;
}

// Reorders the head-dimension axis (rows of a matrix, entries of a vector)
// of every head: out[h, adjacent_index(d)] = in[h, d] when to_adjacent, the
// inverse otherwise.
template <class Tensor>
Tensor permute_heads(const Tensor& in, size_t head_dim, bool to_adjacent) {
  Tensor out = in;
  const size_t n = in.shape()[0];
  for (size_t head = 0; head < n / head_dim; ++head)
    for (size_t d = 0; d < head_dim; ++d) {
      const size_t a = head * head_dim + adjacent_index(d, head_dim), r = head * head_dim + d;
      if constexpr (Tensor::rank == 1) {
        (to_adjacent ? out(a) : out(r)) = to_adjacent ? in(r) : in(a);
      } else {
        xt::row(out, to_adjacent ? a : r) = xt::row(in, to_adjacent ? r : a);
      }
    }
  return out;
}

}  // namespace

ModelWeights with_rope_layout(ModelWeights w, RopeLayout target) {
  if (w.config.rope_layout == target) return w;
  const bool to_adjacent = target == RopeLayout::AdjacentPairs;
  const auto head_dim = size_t(w.config.head_dim());
  for (auto& L : w.layers) {
    L.wq = permute_heads(L.wq, head_dim, to_adjacent);
    L.wk = permute_heads(L.wk, head_dim, to_adjacent);
    if (w.config.qkv_bias) {
      L.bq = permute_heads(L.bq, head_dim, to_adjacent);
      L.bk = permute_heads(L.bk, head_dim, to_adjacent);
    }
    if (w.config.qk_norm) {  // one head's worth: the same reordering
      L.q_norm = permute_heads(L.q_norm, head_dim, to_adjacent);
      L.k_norm = permute_heads(L.k_norm, head_dim, to_adjacent);
    }
  }
  w.config.rope_layout = target;
  return w;
}

}  // namespace astrai
