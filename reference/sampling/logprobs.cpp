// Log-probabilities of the raw logits (see logprobs.h).
#include "reference/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "reference/sampling/sampler.h"

namespace astrai {

TokenLogprobs token_logprobs(std::span<const float> logits, int token, int top_n) {
  if (token < 0 || std::size_t(token) >= logits.size())
    throw std::invalid_argument("logprobs: token " + std::to_string(token) + " is outside the row");
  const Candidates finite = candidates_from_logits(logits);  // rejects the rows the sampler rejects
  double max = finite.front().logit;
  for (const Candidate& c : finite) max = std::max(max, c.logit);
  double sum = 0.0;
  for (const Candidate& c : finite) sum += std::exp(c.logit - max);  // id order; >= 1 (the maximum's term)
  const double log_total = max + std::log(sum);
  TokenLogprobs result;
  result.logprob = double(logits[std::size_t(token)]) - log_total;  // -inf for a masked token
  const std::size_t n = std::min(std::size_t(std::clamp(top_n, 0, kMaxTopLogprobs)), finite.size());
  Candidates top = finite;
  std::partial_sort(top.begin(), top.begin() + std::ptrdiff_t(n), top.end(), more_likely);
  for (std::size_t i = 0; i < n; ++i) result.top.push_back({top[i].id, top[i].logit - log_total});
  return result;
}

}  // namespace astrai
