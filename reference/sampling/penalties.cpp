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

std::optional<LogitAdjustment> adjustment_of(const SamplingParams& params, int token, int generated, bool in_prompt,
                                             const float* bias) {
  const bool repetition = params.repetition_penalty != 1.0f && (in_prompt || generated > 0);
  const bool counted = generated > 0 && (params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f);
  if (!repetition && !counted && bias == nullptr) return std::nullopt;
  LogitAdjustment a{token, false, repetition, 0.0};
  if (generated > 0)
    a.offset = -(double(params.frequency_penalty) * double(generated) + double(params.presence_penalty));
  if (bias != nullptr) {
    a.banned = *bias <= kLogitBiasBan;
    a.offset = double(*bias) + a.offset;  // bias - (f * n + p), as penalties.h says (negation is exact)
  }
  return a;
}

std::vector<LogitAdjustment> logit_adjustments(const SamplingParams& params, const TokenCounts& counts) {
  std::vector<LogitAdjustment> adjustments;
  if (!params.adjusts_logits()) return adjustments;
  std::unordered_map<int, float> bias(params.logit_bias.begin(), params.logit_bias.end());
  for (const TokenCounts::Entry& e : counts.entries()) {
    const auto b = bias.find(e.token);
    if (auto a = adjustment_of(params, e.token, e.generated, e.in_prompt, b == bias.end() ? nullptr : &b->second))
      adjustments.push_back(*a);
    if (b != bias.end()) bias.erase(b);
  }
  for (const auto& [token, value] : params.logit_bias)  // biased tokens not seen yet
    if (bias.count(token) != 0) adjustments.push_back(*adjustment_of(params, token, 0, false, &value));
  return adjustments;
}

AdjustmentList::AdjustmentList(const SamplingParams& params, std::span<const int> prompt)
    : params_(params), counts_(prompt), bias_(params.logit_bias.begin(), params.logit_bias.end()) {
  adjustments_ = logit_adjustments(params, counts_);
  for (std::size_t i = 0; i < adjustments_.size(); ++i) at_[adjustments_[i].token] = i;
}

void AdjustmentList::add_generated(int token) {
  counts_.add_generated(token);
  const auto b = bias_.find(token);
  const std::optional<LogitAdjustment> a =
      adjustment_of(params_, token, counts_.generated(token), false, b == bias_.end() ? nullptr : &b->second);
  if (!a) return;  // (a token generated once always has one: it was seen)
  // in_prompt only decides whether the repetition penalty applies, and a
  // generated token has it either way.
  const auto [it, inserted] = at_.try_emplace(token, adjustments_.size());
  if (inserted)
    adjustments_.push_back(*a);
  else
    adjustments_[it->second] = *a;
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
