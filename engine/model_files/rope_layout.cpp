// RoPE layouts of weights (see rope_layout.h).
#include "engine/model_files/rope_layout.h"

#include <algorithm>
#include <vector>

namespace astrai {

namespace {

// Position in adjacent-pairs order of the head dimension that sits at `d` in
// rotate-half order: the first half's i goes to 2i, the second half's i to 2i + 1.
size_t adjacent_index(size_t d, size_t head_dim) {
  const size_t half = head_dim / 2;
  return d < half ? 2 * d : 2 * (d - half) + 1;
}

// Reorders the head-dimension axis (rows of `rows` x cols values) of every
// head in place: out[h, adjacent_index(d)] = in[h, d] when to_adjacent, the
// inverse otherwise. One head is copied aside at a time.
void permute_heads(std::span<float> values, size_t rows, size_t head_dim, bool to_adjacent) {
  const size_t cols = values.size() / rows;
  std::vector<float> head(head_dim * cols);
  for (size_t h = 0; h < rows / head_dim; ++h) {
    float* base = values.data() + h * head_dim * cols;
    std::copy_n(base, head.size(), head.begin());
    for (size_t d = 0; d < head_dim; ++d) {
      const size_t a = adjacent_index(d, head_dim);
      const size_t to = to_adjacent ? a : d, from = to_adjacent ? d : a;
      std::copy_n(head.data() + from * cols, cols, base + to * cols);
    }
  }
}

}  // namespace

void to_rope_layout(std::span<float> values, const ModelTensor& t, const ModelConfig& config, RopeLayout target) {
  if (config.rope_layout == target || !t.row->head_rows) return;
  permute_heads(values, t.shape[0], size_t(config.head_dim()), target == RopeLayout::AdjacentPairs);
}

ModelWeights with_rope_layout(ModelWeights w, RopeLayout target) {
  if (w.config.rope_layout == target) return w;
  // tied: the classifier has no head rows, and may be empty here.
  for_each_model_tensor(w.config, /*tied=*/true, [&](const ModelTensor& t) {
    visit_weight(w, t, [&](auto& field) {
      to_rope_layout(std::span<float>(field.data(), field.size()), t, w.config, target);
    });
  });
  w.config.rope_layout = target;
  return w;
}

ModelSource with_rope_layout(ModelSource source, RopeLayout target) {
  if (source.config.rope_layout == target) return source;
  const ModelConfig from = source.config;
  source.read = [read = std::move(source.read), from, target](const ModelTensor& t) {
    std::vector<float> values = read(t);
    to_rope_layout(values, t, from, target);
    return values;
  };
  source.config.rope_layout = target;
  return source;
}

}  // namespace astrai
