// What the scheduler asks of a backend: run the forward pass over a batch of
// tokens against a KV cache. The CPU reference and the CUDA implementation sit
// behind this one interface, so the scheduler and everything above it are
// written once.
#pragma once

#include <memory>
#include <span>
#include <string>

#include <xtensor/xtensor.hpp>

#include "reference/batch.h"
#include "reference/kv_cache_view.h"
#include "reference/model_config.h"

namespace astrai {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const ModelConfig& config() const = 0;
  // Same contract as astrai::forward (reference/forward.h): writes each row's
  // K/V to `cache` and returns the logits of the rows with want_logits.
  virtual xt::xtensor<float, 2> forward(std::span<const BatchToken> batch, KVCacheView& cache) = 0;
  // For logs and /stats: "cpu-reference", "cuda-bf16", ...
  virtual std::string name() const = 0;
};

}  // namespace astrai
