// Executor::forward_and_sample's default, and forward_and_sample_with_forks':
// the reference sampler on the host.
#include "engine/executor/executor.h"

#include <stdexcept>
#include <vector>

#include "reference/sampling/sampler.h"
#include "reference/sampling/token_mask.h"

namespace astrai {

std::vector<SampledToken> sample_rows(const xt::xtensor<float, 2>& logits, std::span<const RowSampling> rows) {
  if (logits.shape(0) != rows.size())
    throw std::invalid_argument("sampling: " + std::to_string(rows.size()) + " rows of sampling parameters for " +
                                std::to_string(logits.shape(0)) + " rows of logits");
  return sample_rows(std::span<const float>(logits.data(), logits.size()), logits.shape(1), rows);
}

std::vector<SampledToken> sample_rows(std::span<const float> logits, size_t vocab, std::span<const RowSampling> rows) {
  if (logits.size() != rows.size() * vocab)
    throw std::invalid_argument("sampling: " + std::to_string(logits.size()) + " logits are not " +
                                std::to_string(rows.size()) + " rows of " + std::to_string(vocab));
  std::vector<SampledToken> tokens(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::span<const float> row = logits.subspan(r * vocab, vocab);
    try {
      std::vector<float> adjusted;  // a copy only for a row with penalties, bias or a mask
      if (!rows[r].adjustments.empty() || !rows[r].mask.empty()) {
        adjusted.assign(row.begin(), row.end());
        apply_adjustments(adjusted, rows[r].adjustments, rows[r].params.repetition_penalty);
        if (!rows[r].mask.empty()) apply_token_mask(adjusted, rows[r].mask);
      }
      const int token =
          sample_with_uniform(adjusted.empty() ? row : std::span<const float>(adjusted), rows[r].params, rows[r].uniform);
      if (rows[r].logprobs >= 0) tokens[r].logprobs = token_logprobs(row, token, rows[r].logprobs);
      tokens[r].token = token;
    } catch (const std::exception& e) {
      tokens[r].error = e.what();
    }
  }
  return tokens;
}

std::vector<SampledToken> Executor::forward_and_sample(std::span<const BatchToken> batch, KVCacheView& cache,
                                                       std::span<const RowSampling> rows) {
  return sample_rows(forward(batch, cache), rows);
}

std::vector<SampledToken> Executor::forward_and_sample_with_forks(std::span<const BatchToken> batch,
                                                                  KVCacheView& cache,
                                                                  std::span<const RowSampling> rows,
                                                                  std::span<const ForkDraw> forks) {
  if (forks.empty()) return forward_and_sample(batch, cache, rows);
  const xt::xtensor<float, 2> logits = forward(batch, cache);
  std::vector<SampledToken> tokens = sample_rows(logits, rows);
  const size_t vocab = logits.shape(1);
  for (const ForkDraw& fork : forks) {
    if (fork.row >= rows.size())
      throw std::invalid_argument("sampling: a fork draws from wanted row " + std::to_string(fork.row) + " of " +
                                  std::to_string(rows.size()));
    const std::span<const float> row(logits.data() + fork.row * vocab, vocab);
    tokens.push_back(sample_rows(row, vocab, std::span(&fork.sampling, 1)).front());
  }
  return tokens;
}

}  // namespace astrai
