#include "reference/speculative_generate.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "reference/sampling/verify_proposals.h"

namespace astrai {

std::vector<int> generate_speculative(const ModelWeights& weights, std::span<const int> prompt,
                                      const GenerateOptions& options, const TokenChooser& choose,
                                      const TokenProposer& propose, SpeculationCounts* counts) {
  const int context = weights.config.max_seq_len;
  if (prompt.empty()) throw std::invalid_argument("generate_speculative: the prompt must hold at least one token (BOS)");
  if (int(prompt.size()) > context)
    throw std::invalid_argument("generate_speculative: the prompt has " + std::to_string(prompt.size()) +
                                " tokens but the context holds " + std::to_string(context));
  SpeculationCounts local;
  SpeculationCounts& n = counts ? *counts : local;
  DenseKVCache cache(weights.config, 1);
  const auto& stops = options.stop_tokens;
  std::vector<int> seen(prompt.begin(), prompt.end());  // the proposer's context
  std::vector<int> out;
  // The sequential loop's end test for the `nth` token (1-based), chosen
  // from the logits of position `at`: a stop token, the last token allowed,
  // or no position left to feed it at.
  const auto ends_with = [&](int token, int nth, int at) {
    return std::find(stops.begin(), stops.end(), token) != stops.end() || nth >= options.max_new_tokens ||
           at + 1 >= context;
  };
  if (options.max_new_tokens <= 0) return out;

  std::vector<BatchToken> batch;
  for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], 0, int(i), i + 1 == prompt.size()});
  auto logits = forward(weights, batch, cache);
  ++n.forward_passes;
  int pos = int(prompt.size()) - 1;  // the position whose logits row 0 holds
  std::vector<int> proposals;
  for (;;) {
    // Rows 0..k of `logits` score positions pos..pos+k; row i predicts the
    // token after proposals[i - 1] (row 0: after the last chosen token).
    const size_t vocab = logits.shape(1);
    const Verification v = verify_proposals(proposals, [&](size_t row) {
      const int token = choose(std::span<const float>(logits.data() + row * vocab, vocab));
      return Draw{token, ends_with(token, int(out.size() + row) + 1, pos + int(row))};
    });
    // A request that ends on a proposal its sampler drew kept that proposal too.
    const bool kept_last = v.ended && size_t(v.accepted) < proposals.size() && v.token == proposals[size_t(v.accepted)];
    n.accepted += v.accepted + (kept_last ? 1 : 0);
    out.insert(out.end(), proposals.begin(), proposals.begin() + v.accepted);
    out.push_back(v.token);
    seen.insert(seen.end(), proposals.begin(), proposals.begin() + v.accepted);
    seen.push_back(v.token);
    if (v.ended) break;
    pos += v.accepted + 1;  // where v.token is fed
    // Proposals fill positions pos + 1 .. pos + k: inside the context, and
    // no more than max_new_tokens can use (the pass yields at most k + 1 tokens).
    const int most = std::min(context - 1 - pos, options.max_new_tokens - int(out.size()) - 1);
    proposals = most > 0 ? propose(seen, most) : std::vector<int>{};
    if (int(proposals.size()) > most) proposals.resize(size_t(most));
    n.proposed += long(proposals.size());
    batch.assign({BatchToken{v.token, 0, pos, true}});
    for (size_t i = 0; i < proposals.size(); ++i) batch.push_back({proposals[i], 0, pos + 1 + int(i), true});
    logits = forward(weights, batch, cache);
    ++n.forward_passes;
  }
  return out;
}

}  // namespace astrai
