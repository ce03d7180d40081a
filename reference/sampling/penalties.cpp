// Penalties and logit bias (see penalties.h for the rules).
#include "reference/sampling/penalties.h"

#include <limits>
#include <stdexcept>
#include <string>

namespace astrai {

TokenCounts::TokenCounts(std::span<const int> prompt) {
  for (int token : prompt) entry(token).in_prompt = true;
}

TokenCounts::Entry& TokenCounts::entry(int token) {
  const auto [it, inserted] = index_.try_emplace(token, entries_.size());
  if (inserted) entries_.push_back({token, 0, false});
  return entries_[it->second];
}

void TokenCounts::add_generated(int token) { ++entry(token).generated; }

int TokenCounts::generated(int token) const {
  const auto it = index_.find(token);
  return it == index_.end() ? 0 : entries_[it->second].generated;
}

std::vector<LogitAdjustment> logit_adjustments(const SamplingParams& params, const TokenCounts& counts) {
  std::vector<LogitAdjustment> adjustments;
  if (!params.adjusts_logits()) return adjustments;
  const bool repetition = params.repetition_penalty != 1.0f;
  const bool counted = params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f;
  std::unordered_map<int, std::size_t> at;  // token -> its adjustment
  if (repetition || counted) {
    for (const TokenCounts::Entry& e : counts.entries()) {
      if (!repetition && e.generated == 0) continue;  // only the repetition penalty reads the prompt
      LogitAdjustment a{e.token, false, repetition, 0.0};
      if (e.generated > 0)
        a.offset = -(double(params.frequency_penalty) * double(e.generated) + double(params.presence_penalty));
      at[e.token] = adjustments.size();
      adjustments.push_back(a);
    }
  }
  for (const auto& [token, bias] : params.logit_bias) {
    const auto it = at.find(token);
    LogitAdjustment& a = it != at.end() ? adjustments[it->second] : adjustments.emplace_back(LogitAdjustment{token});
    a.banned = bias <= kLogitBiasBan;
    a.offset = double(bias) + a.offset;  // bias - (f * n + p), as penalties.h says (negation is exact)
  }
  return adjustments;
}

float adjusted_logit(float logit, const LogitAdjustment& adjustment, float repetition_penalty) {
  if (adjustment.banned) return -std::numeric_limits<float>::infinity();
  double x = logit;
  if (adjustment.repetition) x = x > 0.0 ? x / double(repetition_penalty) : x * double(repetition_penalty);
  return static_cast<float>(x + adjustment.offset);
}

void apply_adjustments(std::span<float> row, std::span<const LogitAdjustment> adjustments, float repetition_penalty) {
  for (const LogitAdjustment& a : adjustments) {
    if (a.token < 0 || std::size_t(a.token) >= row.size())
      throw std::invalid_argument("sampling: logit_bias token id " + std::to_string(a.token) +
                                  " is outside the vocabulary of " + std::to_string(row.size()));
    row[std::size_t(a.token)] = adjusted_logit(row[std::size_t(a.token)], a, repetition_penalty);
  }
}

}  // namespace astrai
