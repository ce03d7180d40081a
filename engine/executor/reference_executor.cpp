#include "engine/executor/reference_executor.h"

#include <stdexcept>

#include "reference/forward.h"

namespace astrai {

ReferenceExecutor::ReferenceExecutor(std::shared_ptr<const ModelWeights> weights) : weights_(std::move(weights)) {
  if (!weights_) throw std::invalid_argument("ReferenceExecutor needs model weights");
  weights_->validate_shapes();
}

xt::xtensor<float, 2> ReferenceExecutor::forward(std::span<const BatchToken> batch, KVCacheView& cache) {
  return astrai::forward(*weights_, batch, cache);
}

}  // namespace astrai
