// The working set the sampling strategies transform: the tokens still in the
// running, each with its (possibly rescaled) logit. A strategy removes
// candidates or changes logits; whatever is left at the end is softmaxed and
// drawn from.
//
// Logits are held in float64: dividing a float logit by a tiny temperature
// cannot overflow, and the softmax sums stay accurate over a 32000-token
// vocabulary.
#pragma once

#include <span>
#include <vector>

namespace astrai {

struct Candidate {
  int id = 0;           // token id (index into the logits row)
  double logit = 0.0;
};

using Candidates = std::vector<Candidate>;

// One candidate per token whose logit is finite; a -inf logit is a token
// masked out by the caller and never becomes a candidate. Throws
// std::invalid_argument for an empty row, a NaN or +inf logit (naming its
// index), or a row where every logit is -inf.
Candidates candidates_from_logits(std::span<const float> logits);

// The order "more likely first": logit descending, ties by lower id first.
// It is a strict total order on distinct ids, so sorting is deterministic.
bool more_likely(const Candidate& a, const Candidate& b);

// Softmax of the candidates' logits in their current order, in float64 with
// the maximum subtracted first: p_i = exp(l_i - max) / sum_j exp(l_j - max).
// The sum runs in candidate order. Needs at least one candidate.
std::vector<double> softmax(std::span<const Candidate> candidates);

}  // namespace astrai
