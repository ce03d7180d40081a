// The CPU reference as an executor: the oracle itself serves requests.
#pragma once

#include <memory>

#include "engine/executor/executor.h"
#include "reference/model_weights.h"

namespace astrai {

class ReferenceExecutor final : public Executor {
 public:
  explicit ReferenceExecutor(std::shared_ptr<const ModelWeights> weights);
  const ModelConfig& config() const override { return weights_->config; }
  xt::xtensor<float, 2> forward(std::span<const BatchToken> batch, KVCacheView& cache) override;
  std::string name() const override { return "cpu-reference"; }
  size_t weights_bytes() const override { return weights_bytes_; }

 private:
  std::shared_ptr<const ModelWeights> weights_;
  size_t weights_bytes_ = 0;  // float32, every tensor
};

}  // namespace astrai
