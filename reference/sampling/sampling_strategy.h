// The sampling strategies: each one is a rule that narrows or reshapes the
// candidate set (see candidates.h), and SamplingPipeline applies them in
// order. A strategy never draws a random number; only the final softmax +
// multinomial step does.
#pragma once

#include <string>

#include "reference/sampling/candidates.h"

namespace astrai {

class BaseSamplingStrategy {
 public:
  virtual ~BaseSamplingStrategy() = default;
  // Transforms the candidates in place; leaves at least one candidate.
  virtual void apply(Candidates& candidates) const = 0;
  // "temperature(0.7)", "top_k(50)", ... for logs and error messages.
  virtual std::string describe() const = 0;
};

// l_i <- l_i / T for T > 0: T < 1 sharpens the distribution, T > 1 flattens
// it. (T = 0, greedy, is the limit and is handled by the pipeline as top-k 1.)
class TemperatureStrategy final : public BaseSamplingStrategy {
 public:
  // Throws std::invalid_argument unless temperature is finite and > 0.
  explicit TemperatureStrategy(float temperature);
  void apply(Candidates& candidates) const override;
  std::string describe() const override;

 private:
  double temperature_;
};

// Keeps the k candidates with the largest logits. Ties at the k-th value are
// broken by lower token id, so exactly min(k, n) candidates remain and the
// result does not depend on the input order. k = 0 keeps everything.
class TopKStrategy final : public BaseSamplingStrategy {
 public:
  // Throws std::invalid_argument for k < 0.
  explicit TopKStrategy(int k);
  void apply(Candidates& candidates) const override;
  std::string describe() const override;

 private:
  int k_;
};

// Nucleus sampling: with p_i the softmax of the current candidates, sorted by
// p_i descending (ties by lower id), keeps the shortest prefix whose mass
// sum p_i reaches p (>= p, compared in float64 against the float p as given).
// At least one candidate always remains; p = 1 keeps everything.
class TopPStrategy final : public BaseSamplingStrategy {
 public:
  // Throws std::invalid_argument unless p is in (0, 1].
  explicit TopPStrategy(float p);
  void apply(Candidates& candidates) const override;
  std::string describe() const override;

 private:
  float p_;
};

}  // namespace astrai
