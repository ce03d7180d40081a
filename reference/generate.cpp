#include "reference/generate.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "reference/dense_kv_cache.h"
#include "reference/forward.h"

namespace astrai {

int argmax(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("argmax of an empty logits row");
  return int(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::vector<int> generate(const ModelWeights& weights, std::span<const int> prompt, const GenerateOptions& options,
                          const TokenChooser& choose) {
  const int context = weights.config.max_seq_len;
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt must hold at least one token (BOS)");
  if (int(prompt.size()) > context)
    throw std::invalid_argument("generate: the prompt has " + std::to_string(prompt.size()) +
                                " tokens but the context holds " + std::to_string(context));
  DenseKVCache cache(weights.config, 1);

  // Prefill: all prompt tokens in one batch; only the last one needs logits.
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], 0, int(i), i + 1 == prompt.size()});
  auto logits = forward(weights, batch, cache);

  std::vector<int> out;
  int pos = int(prompt.size());  // where the next chosen token will be fed
  while (int(out.size()) < options.max_new_tokens) {
    const int token = choose(std::span<const float>(logits.data(), logits.shape(1)));
    out.push_back(token);
    const auto& stops = options.stop_tokens;
    if (std::find(stops.begin(), stops.end(), token) != stops.end()) break;
    if (int(out.size()) == options.max_new_tokens || pos >= context) break;
    const BatchToken next{token, 0, pos++, true};
    logits = forward(weights, std::span<const BatchToken>(&next, 1), cache);
  }
  return out;
}

}  // namespace astrai
