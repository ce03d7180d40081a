#include "tests/engine/scheduler/speculation_oracle.h"

#include <algorithm>

#include "engine/executor/reference_executor.h"
#include "engine/kv_cache/page_cache.h"

namespace astrai::test {

const char* guess_name(Guess g) {
  switch (g) {
    case Guess::Ngram: return "n-gram lookup";
    case Guess::Right: return "the reference's continuation";
    case Guess::Wrong: return "the continuation shifted by one id";
    case Guess::Mixed: return "the continuation with one wrong token";
    case Guess::Draft: return "a draft model (the tiny model, greedy)";
  }
  return "?";
}

std::shared_ptr<const Answers> answers_of(const std::vector<PlannedRequest>& requests) {
  auto answers = std::make_shared<Answers>();
  for (const auto& r : requests) answers->push_back({r.prompt, r.expected});
  return answers;
}

std::optional<std::vector<int>> continuation(const Answers& answers, std::span<const int> context) {
  for (const auto& [prompt, expected] : answers) {
    if (context.size() < prompt.size() || context.size() > prompt.size() + expected.size()) continue;
    if (!std::equal(prompt.begin(), prompt.end(), context.begin())) continue;
    const long generated = long(context.size() - prompt.size());
    if (!std::equal(expected.begin(), expected.begin() + generated, context.begin() + long(prompt.size()))) continue;
    return std::vector<int>(expected.begin() + generated, expected.end());
  }
  return std::nullopt;
}

SpeculationConfig speculation(Guess guess, std::shared_ptr<const Answers> answers, int vocab, int k) {
  // min_match 1: the tiny models' short outputs repeat single tokens more often than pairs.
  if (guess == Guess::Ngram) return ngram_speculation({.max_match = 3, .min_match = 1, .tokens = k});
  if (guess == Guess::Draft) return draft_speculation(tiny_model().weights, k);
  TokenProposer propose = [guess, answers, vocab](std::span<const int> context, int most) {
    std::vector<int> guessed = continuation(*answers, context).value_or(std::vector<int>{});
    if (int(guessed.size()) > most) guessed.resize(size_t(most));
    if (guess == Guess::Wrong)
      for (int& id : guessed) id = (id + 1) % vocab;
    // One wrong token at a place that varies with the context (none when it
    // falls past the end): every length of kept prefix occurs.
    const size_t wrong_at = context.size() % size_t(most + 1);
    if (guess == Guess::Mixed && wrong_at < guessed.size()) guessed[wrong_at] = (guessed[wrong_at] + 7) % vocab;
    return guessed;
  };
  return {propose, k, guess_name(guess)};
}

SpeculationConfig draft_speculation(std::shared_ptr<const ModelWeights> weights, int k, int contexts, int sequences) {
  const ModelConfig config = weights->config;
  const int page = 4;
  const int pages = contexts * ((config.max_seq_len + page - 1) / page);
  auto draft = std::make_shared<DraftModelProposer>(std::make_unique<ReferenceExecutor>(std::move(weights)),
                                                    std::make_unique<PageCache>(config, pages, page), sequences);
  return draft_model_speculation(std::move(draft), k);
}

}  // namespace astrai::test
