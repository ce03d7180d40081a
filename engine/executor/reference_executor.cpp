#include "engine/executor/reference_executor.h"

#include "engine/model_files/weight_table.h"

#include <stdexcept>

#include "reference/forward.h"

namespace astrai {

ReferenceExecutor::ReferenceExecutor(std::shared_ptr<const ModelWeights> weights) : weights_(std::move(weights)) {
  if (!weights_) throw std::invalid_argument("ReferenceExecutor needs model weights");
  weights_->validate_shapes();
  // Every tensor, the classifier too (the reference holds it even when tied).
  for_each_model_tensor(weights_->config, false, [&](const ModelTensor& t) {
    visit_weight(*weights_, t, [&](const auto& field) { weights_bytes_ += field.size() * sizeof(float); });
  });
}

xt::xtensor<float, 2> ReferenceExecutor::forward(std::span<const BatchToken> batch, KVCacheView& cache) {
  return astrai::forward(*weights_, batch, cache);
}

}  // namespace astrai
