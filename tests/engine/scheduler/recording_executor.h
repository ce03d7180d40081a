// An executor that runs the CPU reference and records every batch it is
// given, so that tests can check what the scheduler planned (the step's token
// budget, one chunk per task, decode rows before prompt chunks), not only
// what came out of it: the reference gives the same bits at any batch size,
// so outputs alone cannot show a step that ran too many tokens.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/executor/reference_executor.h"

namespace astrai::test {

// The batches a RecordingExecutor saw, shared with the test (the executor
// itself moves into the engine).
struct BatchLog {
  std::mutex mutex;
  std::vector<std::vector<BatchToken>> batches;

  std::vector<std::vector<BatchToken>> snapshot() {
    std::lock_guard lock(mutex);
    return batches;
  }
};

class RecordingExecutor final : public Executor {
 public:
  RecordingExecutor(std::shared_ptr<const ModelWeights> weights, std::shared_ptr<BatchLog> log)
      : inner_(std::move(weights)), log_(std::move(log)) {}
  const ModelConfig& config() const override { return inner_.config(); }
  xt::xtensor<float, 2> forward(std::span<const BatchToken> batch, KVCacheView& cache) override {
    {
      std::lock_guard lock(log_->mutex);
      log_->batches.emplace_back(batch.begin(), batch.end());
    }
    return inner_.forward(batch, cache);
  }
  std::string name() const override { return "recording cpu-reference"; }

 private:
  ReferenceExecutor inner_;
  std::shared_ptr<BatchLog> log_;
};

}  // namespace astrai::test
