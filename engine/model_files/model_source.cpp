// Weights in memory as a ModelSource, and a source read whole (see model_source.h).
#include "engine/model_files/model_source.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "reference/synthetic_model.h"

namespace astrai {

ModelSource model_source(const ModelWeights& w) {
  const bool tied = w.classifier.shape() == w.token_embedding.shape() &&
                    std::memcmp(w.classifier.data(), w.token_embedding.data(), w.classifier.size() * sizeof(float)) == 0;
  return ModelSource{w.config, tied,
                     [&w](const ModelTensor& t) {
                       std::vector<float> values;
                       visit_weight(w, t, [&](const auto& field) { values.assign(field.begin(), field.end()); });
                       return values;
                     },
                     nullptr, nullptr, w.stored};
}

ModelSource model_source(std::shared_ptr<const ModelWeights> weights) {
  if (!weights) throw std::invalid_argument("model_source: no weights");
  ModelSource source = model_source(*weights);
  source.read = [weights, read = std::move(source.read)](const ModelTensor& t) { return read(t); };
  return source;
}

ModelSource synthetic_model_source(const ModelConfig& config, uint64_t seed, bool tied) {
  return ModelSource{config, tied,
                     [config, seed](const ModelTensor& t) { return synthetic_tensor(config, seed, t.row->field, t.layer); },
                     nullptr, nullptr, {}};
}

ModelWeights read_model_weights(const ModelSource& source) {
  ModelWeights w = read_model_weights(source.config, source.tied, [&](const ModelTensor& t, const auto& shape) {
    constexpr size_t rank = std::tuple_size_v<std::remove_cvref_t<decltype(shape)>>;
    const std::vector<float> values = source.read(t);
    xt::xtensor<float, rank> out(shape);
    if (values.size() != out.size())
      throw std::runtime_error(t.gguf_name() + ": the source gave " + std::to_string(values.size()) +
                               " values for " + std::to_string(out.size()) + " elements");
    std::copy(values.begin(), values.end(), out.begin());
    return out;
  });
  w.stored = source.stored;
  return w;
}

}  // namespace astrai
