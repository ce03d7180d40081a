// Weights in memory as a ModelSource (see model_source.h).
#include "engine/model_files/model_source.h"

#include <cstring>

#include "reference/synthetic_model.h"

namespace astrai {

ModelSource model_source(const ModelWeights& w) {
  const bool tied = w.classifier.shape() == w.token_embedding.shape() &&
                    std::memcmp(w.classifier.data(), w.token_embedding.data(), w.classifier.size() * sizeof(float)) == 0;
  return ModelSource{w.config, tied, [&w](const ModelTensor& t) {
                       std::vector<float> values;
                       visit_weight(w, t, [&](const auto& field) { values.assign(field.begin(), field.end()); });
                       return values;
                     }};
}

ModelSource synthetic_model_source(const ModelConfig& config, uint64_t seed, bool tied) {
  return ModelSource{config, tied, [config, seed](const ModelTensor& t) {
                       return synthetic_tensor(config, seed, t.row->field, t.layer);
                     }};
}

}  // namespace astrai
