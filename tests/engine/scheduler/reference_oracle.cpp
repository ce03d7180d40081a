// The sequential reference loop as the oracle of the engine tests.
#include "tests/engine/scheduler/reference_oracle.h"

#include <algorithm>
#include <stdexcept>

#include "reference/generate.h"
#include "reference/sampling/sampler.h"

namespace astrai::test {

std::vector<int> reference_tokens(const ModelWeights& weights, const Tokenizer& tokenizer,
                                  std::span<const int> prompt, int max_tokens, const SamplingParams& sampling,
                                  bool ignore_eos, const std::vector<int>& stop_token_ids, int logprobs,
                                  std::vector<TokenLogprobs>* logprobs_out) {
  GenerateOptions options;
  options.max_new_tokens = max_tokens;
  if (!ignore_eos) options.stop_tokens = {tokenizer.eos_id(), tokenizer.bos_id()};
  for (int id : stop_token_ids) options.stop_tokens.push_back(id);  // (insert() trips GCC 12's -Warray-bounds)
  SamplerState sampler(sampling, prompt);  // the prompt counts for the repetition penalty
  return generate(weights, prompt, options, [&](std::span<const float> logits) {
    const int token = sampler.next(logits);
    if (logprobs >= 0 && logprobs_out) logprobs_out->push_back(token_logprobs(logits, token, logprobs));
    return token;
  });
}

std::vector<int> compacted_reference_tokens(const ModelWeights& weights, const Tokenizer& tokenizer,
                                            std::span<const int> prompt, int max_tokens,
                                            const SamplingParams& sampling,
                                            const std::function<std::vector<int>(const std::vector<int>&)>& allowed,
                                            bool ignore_eos, int logprobs, std::vector<TokenLogprobs>* logprobs_out) {
  if (!sampling.seed || sampling.adjusts_logits())
    throw std::invalid_argument("compacted_reference_tokens: a seeded request without penalties or bias");
  GenerateOptions options;
  options.max_new_tokens = max_tokens;
  if (!ignore_eos) options.stop_tokens = {tokenizer.eos_id(), tokenizer.bos_id()};
  Rng rng(*sampling.seed);
  std::vector<int> generated;
  return generate(weights, prompt, options, [&](std::span<const float> logits) {
    const std::vector<int> ids = allowed(generated);
    std::vector<float> compact;
    for (int id : ids) compact.push_back(logits[size_t(id)]);
    const int token = ids.at(size_t(sample_with_uniform(compact, sampling, rng.next_uniform())));
    if (logprobs >= 0 && logprobs_out) logprobs_out->push_back(token_logprobs(logits, token, logprobs));
    generated.push_back(token);
    return token;
  });
}

FinishReason reference_reason(const Tokenizer& tokenizer, const std::vector<int>& tokens, int max_tokens,
                              bool ignore_eos, const std::vector<int>& stop_token_ids) {
  const int last = tokens.back();
  if (!ignore_eos && (last == tokenizer.eos_id() || last == tokenizer.bos_id())) return FinishReason::Eos;
  if (std::find(stop_token_ids.begin(), stop_token_ids.end(), last) != stop_token_ids.end()) return FinishReason::Eos;
  if (int(tokens.size()) == max_tokens) return FinishReason::Length;
  return FinishReason::ContextLimit;
}

std::vector<std::string> token_bytes(const Tokenizer& tokenizer, std::span<const int> prompt,
                                     const std::vector<int>& tokens) {
  std::vector<std::string> bytes;
  int previous = prompt.back();
  for (int token : tokens) {
    bytes.push_back(tokenizer.decode_token(previous, token));
    previous = token;
  }
  return bytes;
}

}  // namespace astrai::test
