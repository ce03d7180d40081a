#include "tests/cuda/cuda_generate.h"

#include <algorithm>
#include <span>
#include <stdexcept>

namespace astrai::test {

std::vector<int> cuda_generate(Executor& executor, KVCache& cache, std::vector<int> prompt,
                               const GenerateOptions& options, const TokenChooser& choose, int task,
                               int* prefix_hit) {
  const auto hit = cache.admit(task, prompt);
  if (!hit) throw std::runtime_error("cuda_generate: the cache has no room for the prompt");
  if (prefix_hit) *prefix_hit = *hit;
  std::vector<BatchToken> batch;
  for (int pos = *hit; pos < int(prompt.size()); ++pos)
    batch.push_back({prompt[size_t(pos)], task, pos, pos + 1 == int(prompt.size())});
  auto logits = executor.forward(batch, cache.view());
  cache.commit(task, prompt);
  std::vector<int> out;
  std::vector<int> all = prompt;
  while (true) {
    const int next = choose(std::span<const float>(logits.data(), logits.shape(1)));
    out.push_back(next);
    all.push_back(next);
    const bool stop = std::find(options.stop_tokens.begin(), options.stop_tokens.end(), next) !=
                      options.stop_tokens.end();
    // As reference/generate.cpp: the chosen token is emitted, and feeding it
    // back (at position all.size() - 1) must stay inside the context.
    const int feed_pos = int(all.size()) - 1;
    if (stop || int(out.size()) == options.max_new_tokens || feed_pos >= executor.config().max_seq_len) break;
    if (!cache.reserve(task, int(all.size()))) throw std::runtime_error("cuda_generate: the cache is full");
    const BatchToken row{next, task, int(all.size()) - 1, true};
    logits = executor.forward(std::span<const BatchToken>(&row, 1), cache.view());
    cache.commit(task, all);
  }
  cache.release(task);
  return out;
}

}  // namespace astrai::test
