// The sampler's steps (see sampler.h for the rules).
#include "reference/sampling/sampler.h"
#include "reference/sampling/token_mask.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace astrai {
namespace {

[[maybe_unused]] bool valid(const SamplingParams& params) {  // for assert()
  try {
    params.validate();
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// Throws for a logit no candidate may have (see candidates_from_logits);
// true when the token is a candidate (its logit is finite).
bool candidate_logit(std::size_t i, float logit) {
  if (std::isnan(logit)) throw std::invalid_argument("sampling: logit of token " + std::to_string(i) + " is NaN");
  if (logit == std::numeric_limits<float>::infinity())
    throw std::invalid_argument("sampling: logit of token " + std::to_string(i) +
                                " is +inf (only -inf, a masked token, is allowed)");
  return logit != -std::numeric_limits<float>::infinity();
}

[[noreturn]] void nothing_to_sample(std::size_t n) {
  throw std::invalid_argument("sampling: every one of the " + std::to_string(n) +
                              " logits is -inf, nothing can be sampled");
}

// A row a scan found bad (empty, a NaN or +inf, nothing finite): the error
// candidates_from_logits gives, which names the first bad logit.
[[noreturn]] void reject_row(std::span<const float> logits) {
  candidates_from_logits(logits);
  throw std::logic_error("sampling: a row the scan rejected has candidates");  // not reached
}

// ---- scanning a row: four floats at a time ----
//
// GCC's and Clang's vector types (16 bytes: SSE2 on x86-64, NEON on arm64,
// plain code elsewhere). GCC 12 does not vectorize a max over lanes kept in an
// array without -ffast-math, so the lanes are written out. Each operation is
// the scalar one lane by lane: `a > m ? a : m` (maxps) never takes a NaN, and
// `a < +inf` is false exactly for NaN and +inf.
using Floats4 = float __attribute__((vector_size(16)));
using Mask4 = std::int32_t __attribute__((vector_size(16)));

Floats4 load4(const float* p) {
  Floats4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Scan {
  float max = -std::numeric_limits<float>::infinity();  // NaNs ignored
  bool ok = true;                                        // no NaN and no +inf
};

Scan scan(const float* x, std::size_t n) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const Floats4 infs = {inf, inf, inf, inf};
  Floats4 m0 = -infs, m1 = m0, m2 = m0, m3 = m0;  // four chains, so maxps need not wait on each other
  Mask4 ok = {-1, -1, -1, -1};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const Floats4 a = load4(x + i), b = load4(x + i + 4), c = load4(x + i + 8), d = load4(x + i + 12);
    ok &= (a < infs) & (b < infs) & (c < infs) & (d < infs);
    m0 = a > m0 ? a : m0;
    m1 = b > m1 ? b : m1;
    m2 = c > m2 ? c : m2;
    m3 = d > m3 ? d : m3;
  }
  m0 = m1 > m0 ? m1 : m0;
  m2 = m3 > m2 ? m3 : m2;
  m0 = m2 > m0 ? m2 : m0;
  Scan result;
  for (int lane = 0; lane < 4; ++lane) {
    result.ok &= ok[lane] != 0;
    result.max = m0[lane] > result.max ? m0[lane] : result.max;
  }
  for (; i < n; ++i) {
    result.ok &= x[i] < inf;
    result.max = x[i] > result.max ? x[i] : result.max;
  }
  return result;
}

// The maximum of each of `count` chunks of the row (chunk c is
// [c*n/count, (c+1)*n/count), count <= n), in one pass that also checks the
// row: a row with a NaN or +inf, or with every logit -inf, is rejected.
std::vector<float> chunk_maxima(std::span<const float> logits, std::size_t count) {
  if (logits.empty()) reject_row(logits);
  const std::size_t n = logits.size();
  std::vector<float> maxima(count);
  float max = -std::numeric_limits<float>::infinity();
  for (std::size_t c = 0; c < count; ++c) {
    const std::size_t begin = c * n / count, end = (c + 1) * n / count;
    const Scan chunk = scan(logits.data() + begin, end - begin);
    if (!chunk.ok) reject_row(logits);
    maxima[c] = chunk.max;
    max = chunk.max > max ? chunk.max : max;
  }
  if (max == -std::numeric_limits<float>::infinity()) reject_row(logits);
  return maxima;
}

constexpr std::size_t kGreedyChunk = 2048;

// Greedy without building the candidate set: the first maximum, which is
// what keep_top_k(1) keeps (more_likely: larger logit, then lower id). One
// pass over the row takes each 2048-logit chunk's maximum (checking for NaN
// and +inf on the way); the first chunk holding the row's maximum is then
// searched for its first index.
Candidate greedy_candidate(std::span<const float> logits) {
  const std::size_t n = logits.size();
  const std::size_t count = std::max<std::size_t>(1, (n + kGreedyChunk - 1) / kGreedyChunk);
  const std::vector<float> maxima = chunk_maxima(logits, count);
  std::size_t first = 0;  // the first chunk with the largest maximum
  for (std::size_t c = 1; c < count; ++c)
    if (maxima[c] > maxima[first]) first = c;
  std::size_t best = first * n / count;
  while (logits[best] != maxima[first]) ++best;  // == : -0 and +0 are one value, as in more_likely
  return {static_cast<int>(best), static_cast<double>(logits[best])};
}

// ---- top-k: a floor below which no token can be among the k kept ----
//
// Cut the row into 8k chunks; the k largest chunk maxima are k distinct
// tokens, all at or above the k-th largest maximum, so at least k tokens are
// at or above it and none below it is among the first k. Temperature keeps the
// order: a float over a positive float in float64 is exact to 29 more bits
// than a float holds and far from overflow and underflow, so distinct logits
// stay distinct and in order, and equal ones stay equal.
constexpr std::size_t kChunksPerK = 8, kMinChunk = 4;

// ---- top-p: the nucleus without sorting the whole candidate set ----

// A top-p cut over at least this many candidates selects before it sorts;
// below, it sorts them all (it is cheaper).
constexpr std::size_t kSelectFrom = 128;
// Logit buckets of the selection, over the top 64 (or the whole range, if less).
constexpr std::size_t kBuckets = 4096;

// The tempered logits more than this far below the top: exp of them is under
// 2^-53, so once sorted last, each adds nothing to a running sum that is >= 1
// (the top contributes exp(0) = 1), and a top-p cut (p <= 1 - 2^-24) always
// falls before them (the mass ahead of them is >= 1 - 3 * n * 2^-53). They
// cannot change the kept set or its sum, so they never become candidates
// when top-p cuts (and the row has at most kMaxPrunedRow tokens).
constexpr double kNegligible = 40.0;
constexpr std::size_t kMaxPrunedRow = std::size_t(1) << 22;

// keep_top_p by sorting every candidate: the rule as stated.
void keep_top_p_by_sort(Candidates& candidates, float p) {
  // exp is monotone, so logit order is probability order, and more_likely's
  // tie rule (lower id first) is the tie rule for equal probabilities.
  std::sort(candidates.begin(), candidates.end(), more_likely);
  const std::vector<double> probabilities = softmax(candidates);
  const double threshold = static_cast<double>(p);
  double mass = 0.0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    mass += probabilities[i];
    if (mass >= threshold) {
      candidates.resize(i + 1);
      return;
    }
  }
  // Rounding left the total a hair under p: the whole set is the prefix.
}

// The number of tokens keep_top_p_by_sort keeps when the softmax total is
// `total`: weights are exp(l - max) in more-likely order; 0 if the mass never
// reaches p.
std::size_t nucleus_size(std::span<const std::pair<double, double>> by_logit, double total, double p) {
  double mass = 0.0;
  for (std::size_t i = 0; i < by_logit.size(); ++i) {
    mass += by_logit[i].second / total;
    if (mass >= p) return i + 1;
  }
  return 0;
}

// The largest and the smallest logit of a nonempty set. Not inlined: in
// keep_top_p_by_selection the two running values would be kept in memory (they
// live across calls to exp there), which made this loop its slowest.
[[gnu::noinline]] std::pair<double, double> logit_range(std::span<const Candidate> candidates) {
  double top = candidates.front().logit, bottom = top;
  for (const Candidate& c : candidates) {
    top = c.logit > top ? c.logit : top;
    bottom = c.logit < bottom ? c.logit : bottom;
  }
  return {top, bottom};
}

// keep_top_p_by_sort's kept set without sorting every candidate, left in the
// candidates' own order; false (candidates untouched) where it cannot be sure.
//
// The sorted rule sums the weights w_i = exp(l_i - max) in more-likely order
// into a total T, and keeps the shortest more-likely prefix whose running sum
// of w_i / T reaches p. Here (docs/sampling.md, "Fast paths"):
//  1. w_i and their sum S in the candidates' order. T and S are two float64
//     sums of the same n nonnegative terms, each within (n - 1) * 2^-53 of the
//     exact sum, so T lies in [S(1 - d), S(1 + d)] for d = (8n + 16) * 2^-53.
//  2. A histogram of the weights over 1024 logit buckets below the maximum
//     picks the fewest top buckets whose weight reaches p * S (with room for
//     d): a set of tokens closed under "more likely", so a prefix of the order.
//  3. Only that prefix is sorted (by logit, carrying w_i), and the running sum
//     of w_i / T is taken as the sorted rule takes it, for T = S(1 - d) and
//     T = S(1 + d). Every step of that sum is monotone in T, so the cut for the
//     true T lies between the two; when both cuts are the same token, that is
//     the cut. Otherwise (the mass meets p within d, as exact ties can make it)
//     the caller sorts everything.
bool keep_top_p_by_selection(Candidates& candidates, float p) {
  const std::size_t n = candidates.size();
  if (n < kSelectFrom) return false;
  const std::pair<double, double> range = logit_range(candidates);
  const double top = range.first, bottom = range.second;  // (not a structured binding: clang 14 cannot capture one)
  const double width = std::min(top - bottom, 64.0);
  if (!(width > 0.0)) return false;  // all equal: nothing to select
  const double scale = double(kBuckets) / width;
  const auto bucket = [top, scale](double logit) {  // monotone: a larger logit never has a larger bucket
    const double d = (top - logit) * scale;
    return d >= double(kBuckets - 1) ? kBuckets - 1 : std::size_t(d);
  };
  std::vector<double> weights(n), bucket_weight(kBuckets, 0.0);
  std::vector<std::size_t> bucket_size(kBuckets, 0);
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    // The numerator softmax() computes (the maximum's sign of zero cannot
    // matter: l - (+0) and l - (-0) are the same, or both exp to 1).
    weights[i] = std::exp(candidates[i].logit - top);
    sum += weights[i];
    const std::size_t b = bucket(candidates[i].logit);
    bucket_weight[b] += weights[i];
    ++bucket_size[b];
  }
  const double d = (8.0 * double(n) + 16.0) * 0x1p-53;
  const double threshold = static_cast<double>(p), wanted = threshold * sum * (1.0 + 4.0 * d);
  std::size_t last = 0;
  for (double reached = 0.0; last + 1 < kBuckets; ++last) {
    reached += bucket_weight[last];
    if (reached >= wanted) break;
  }
  if (last + 1 >= kBuckets) return false;  // the prefix would be (nearly) everything
  // The tokens of buckets 0..last, {logit, weight}, placed bucket by bucket
  // (a counting sort), then each bucket sorted by logit descending: the prefix
  // in more-likely order as far as the sum can tell (equal logits have equal
  // weights, so their order cannot change it).
  std::vector<std::size_t> bucket_begin(last + 2, 0);
  for (std::size_t b = 0; b <= last; ++b) bucket_begin[b + 1] = bucket_begin[b] + bucket_size[b];
  std::vector<std::pair<double, double>> prefix(bucket_begin[last + 1]);
  std::vector<std::size_t> next(bucket_begin.begin(), bucket_begin.end() - 1);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t b = bucket(candidates[i].logit);
    if (b <= last) prefix[next[b]++] = {candidates[i].logit, weights[i]};
  }
  for (std::size_t b = 0; b <= last; ++b)
    std::sort(prefix.begin() + std::ptrdiff_t(bucket_begin[b]), prefix.begin() + std::ptrdiff_t(bucket_begin[b + 1]),
              [](const auto& x, const auto& y) { return x.first > y.first; });
  const std::size_t kept = nucleus_size(prefix, sum * (1.0 - d), threshold);
  if (kept == 0 || nucleus_size(prefix, sum * (1.0 + d), threshold) != kept) return false;
  // The first `kept` in more-likely order: every logit above the kept-th, and
  // of those equal to it the lowest ids.
  // Every token with that logit is in the prefix, next to it.
  const double boundary = prefix[kept - 1].first;
  std::size_t first_tied = kept - 1, end_tied = kept;
  while (first_tied > 0 && prefix[first_tied - 1].first == boundary) --first_tied;
  while (end_tied < prefix.size() && prefix[end_tied].first == boundary) ++end_tied;
  int last_tied_id = std::numeric_limits<int>::max();
  if (end_tied > kept) {  // a tie cut in two: the lowest ids go first
    const std::size_t ties_kept = kept - first_tied;
    std::vector<int> tied;
    for (const Candidate& c : candidates)
      if (c.logit == boundary) tied.push_back(c.id);
    std::nth_element(tied.begin(), tied.begin() + std::ptrdiff_t(ties_kept - 1), tied.end());
    last_tied_id = tied[ties_kept - 1];
  }
  std::size_t size = 0;  // keep those in place, in order (without a branch: most go)
  for (const Candidate& c : candidates) {
    candidates[size] = c;
    size += (c.logit > boundary) | (c.logit == boundary && c.id <= last_tied_id);
  }
  candidates.resize(size);
  return true;
}

// The candidates in ascending id order: as they are when already so, a sort
// when few remain (top-k), else by placing each at its id, O(vocab), since a
// top-p cut can keep most.
Candidates in_id_order(Candidates candidates, std::size_t vocab_size) {
  const auto by_id = [](const Candidate& a, const Candidate& b) { return a.id < b.id; };
  if (std::is_sorted(candidates.begin(), candidates.end(), by_id)) return candidates;
  if (candidates.size() * 16 < vocab_size) {
    std::sort(candidates.begin(), candidates.end(), by_id);
    return candidates;
  }
  std::vector<const Candidate*> at_id(vocab_size, nullptr);
  for (const Candidate& c : candidates) at_id[std::size_t(c.id)] = &c;
  Candidates ordered;
  ordered.reserve(candidates.size());
  for (const Candidate* c : at_id)
    if (c != nullptr) ordered.push_back(*c);
  return ordered;
}

}  // namespace

Candidates candidates_from_logits(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("sampling: the logits row is empty");
  Candidates candidates;
  candidates.reserve(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (candidate_logit(i, logits[i])) candidates.push_back({static_cast<int>(i), static_cast<double>(logits[i])});
  if (candidates.empty()) nothing_to_sample(logits.size());
  return candidates;
}

bool more_likely(const Candidate& a, const Candidate& b) {
  if (a.logit != b.logit) return a.logit > b.logit;
  return a.id < b.id;
}

std::vector<double> softmax(std::span<const Candidate> candidates) {
  if (candidates.empty()) throw std::invalid_argument("sampling: softmax of an empty candidate set");
  double max_logit = candidates.front().logit;
  for (const Candidate& c : candidates) max_logit = std::max(max_logit, c.logit);
  std::vector<double> probabilities(candidates.size());
  double total = 0.0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    probabilities[i] = std::exp(candidates[i].logit - max_logit);
    total += probabilities[i];
  }
  // total >= 1: the maximum contributes exp(0) = 1.
  for (double& p : probabilities) p /= total;
  return probabilities;
}

void apply_temperature(Candidates& candidates, float temperature) {
  assert(std::isfinite(temperature) && temperature > 0.0f);
  // In float64 a float logit over a float temperature cannot overflow.
  const double t = temperature;
  for (Candidate& c : candidates) c.logit /= t;
}

void keep_top_k(Candidates& candidates, int k) {
  assert(k >= 0);
  if (k == 0 || candidates.size() <= std::size_t(k)) return;
  // more_likely breaks logit ties by lower id: the first k in that order,
  // selected in O(n), then only those sorted.
  std::nth_element(candidates.begin(), candidates.begin() + (k - 1), candidates.end(), more_likely);
  candidates.resize(std::size_t(k));
  std::sort(candidates.begin(), candidates.end(), more_likely);
}

void keep_top_p(Candidates& candidates, float p) {
  assert(p > 0.0f && p <= 1.0f);
  if (p >= 1.0f) return;
  if (keep_top_p_by_selection(candidates, p))
    std::sort(candidates.begin(), candidates.end(), more_likely);  // the kept prefix, in its order
  else
    keep_top_p_by_sort(candidates, p);
}

void keep_min_p(Candidates& candidates, float min_p) {
  assert(min_p >= 0.0f && min_p <= 1.0f);
  if (min_p == 0.0f || candidates.empty()) return;
  double top = candidates.front().logit;
  for (const Candidate& c : candidates) top = c.logit > top ? c.logit : top;
  const double threshold = static_cast<double>(min_p);
  std::size_t size = 0;
  for (const Candidate& c : candidates)
    if (std::exp(c.logit - top) >= threshold) candidates[size++] = c;  // the top has exp(0) = 1 >= min_p
  candidates.resize(size);
}

std::size_t inverse_cdf(std::span<const double> probabilities, double u) {
  if (probabilities.empty()) throw std::invalid_argument("inverse_cdf: no probabilities to draw from");
  if (!(u >= 0.0 && u < 1.0)) throw std::invalid_argument("inverse_cdf: u must be in [0, 1), got " + std::to_string(u));
  double total = 0.0;
  std::size_t last_positive = probabilities.size();
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    total += probabilities[i];
    if (probabilities[i] > 0.0) last_positive = i;
  }
  if (last_positive == probabilities.size()) throw std::invalid_argument("inverse_cdf: every probability is zero");
  const double target = u * total;
  double cumulative = 0.0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    cumulative += probabilities[i];
    if (cumulative > target) return i;
  }
  return last_positive;
}

Candidates kept_candidates(std::span<const float> logits, const SamplingParams& params) {
  assert(valid(params));
  // Greedy is keep_top_k(1) of the whole candidate set (argmax, lowest id on
  // ties), found in one pass without building the set.
  if (params.temperature == 0.0f) return {greedy_candidate(logits)};
  // One pass checks the row and takes chunk maxima: for top-k, 8k chunks
  // whose k-th largest maximum is a floor for the k kept; else 2048-logit
  // chunks, for the row's maximum.
  const std::size_t n = logits.size(), k = std::size_t(params.top_k);
  const bool top_k_floor = k > 0 && k * kChunksPerK * kMinChunk <= n;
  const std::size_t count =
      top_k_floor ? k * kChunksPerK : std::max<std::size_t>(1, (n + kGreedyChunk - 1) / kGreedyChunk);
  std::vector<float> maxima = chunk_maxima(logits, count);
  float max = -std::numeric_limits<float>::infinity();
  for (float m : maxima) max = m > max ? m : max;
  float floor = -std::numeric_limits<float>::infinity();  // below it, a token cannot be kept
  if (top_k_floor) {
    std::vector<float> largest = maxima;
    std::nth_element(largest.begin(), largest.begin() + std::ptrdiff_t(k - 1), largest.end(), std::greater<float>());
    floor = largest[k - 1];
  }
  // The candidates, in id order, already tempered (apply_temperature's
  // arithmetic), of the chunks that can hold one.
  const double t = params.temperature, top = static_cast<double>(max) / t;
  const bool prune = params.top_p < 1.0f && n <= kMaxPrunedRow;
  Candidates candidates;
  if (!top_k_floor) candidates.reserve(n);
  for (std::size_t c = 0; c < count; ++c) {
    if (maxima[c] < floor) continue;
    for (std::size_t i = c * n / count, end = (c + 1) * n / count; i < end; ++i) {
      const float x = logits[i];
      if (!(x >= floor) || x == -std::numeric_limits<float>::infinity()) continue;
      const double logit = static_cast<double>(x) / t;
      if (prune && logit - top < -kNegligible) continue;
      candidates.push_back({static_cast<int>(i), logit});
    }
  }
  keep_top_k(candidates, params.top_k);
  if (params.top_p < 1.0f && !keep_top_p_by_selection(candidates, params.top_p))
    keep_top_p_by_sort(candidates, params.top_p);
  keep_min_p(candidates, params.min_p);
  return in_id_order(std::move(candidates), n);
}

std::vector<double> probabilities(std::span<const float> logits, const SamplingParams& params) {
  const Candidates kept = kept_candidates(logits, params);
  const std::vector<double> kept_probabilities = softmax(kept);
  std::vector<double> distribution(logits.size(), 0.0);
  for (std::size_t i = 0; i < kept.size(); ++i) distribution[std::size_t(kept[i].id)] = kept_probabilities[i];
  return distribution;
}

int sample_with_uniform(std::span<const float> logits, const SamplingParams& params, double u) {
  const Candidates kept = kept_candidates(logits, params);
  const std::vector<double> kept_probabilities = softmax(kept);
  return kept[inverse_cdf(kept_probabilities, u)].id;
}

int sample_with_uniform(std::span<const float> logits, const SamplingParams& params, double u,
                        std::span<const std::uint32_t> mask) {
  if (mask.empty()) return sample_with_uniform(logits, params, u);
  std::vector<float> row(logits.begin(), logits.end());
  apply_token_mask(row, mask);
  return sample_with_uniform(row, params, u);
}

int sample(std::span<const float> logits, const SamplingParams& params, Rng& rng) {
  return sample_with_uniform(logits, params, rng.next_uniform());
}

int sample(std::span<const float> logits, const SamplingParams& params) { return SamplerState(params).next(logits); }

std::string describe_sampling(const SamplingParams& params) {
  std::string steps;
  if (params.repetition_penalty != 1.0f) steps += "repetition_penalty(" + std::to_string(params.repetition_penalty) + ") -> ";
  if (params.frequency_penalty != 0.0f) steps += "frequency_penalty(" + std::to_string(params.frequency_penalty) + ") -> ";
  if (params.presence_penalty != 0.0f) steps += "presence_penalty(" + std::to_string(params.presence_penalty) + ") -> ";
  if (!params.logit_bias.empty()) steps += "logit_bias(" + std::to_string(params.logit_bias.size()) + " tokens) -> ";
  if (params.temperature == 0.0f) return steps + "top_k(1)";
  steps += "temperature(" + std::to_string(params.temperature) + ") -> top_k(" + std::to_string(params.top_k) +
           ") -> top_p(" + std::to_string(params.top_p) + ")";
  if (params.min_p > 0.0f) steps += " -> min_p(" + std::to_string(params.min_p) + ")";
  return steps;
}

SamplerState::SamplerState(const SamplingParams& params, std::span<const int> prompt)
    : params_((params.validate(), params)),
      seed_(params.seed ? *params.seed : random_seed()),
      rng_(seed_),
      adjustments_(params.adjusts_logits() ? AdjustmentList(params, prompt) : AdjustmentList()) {}

int SamplerState::next(std::span<const float> logits) {
  const double u = next_uniform();
  int token = 0;
  if (params_.adjusts_logits()) {
    std::vector<float> row(logits.begin(), logits.end());
    apply_adjustments(row, adjustments(), params_.repetition_penalty);
    token = sample_with_uniform(row, params_, u);
  } else {
    token = sample_with_uniform(logits, params_, u);
  }
  record(token);
  return token;
}

}  // namespace astrai
