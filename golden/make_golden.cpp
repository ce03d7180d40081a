// Writes golden/synthetic.json: greedy token ids and a few logits of the
// synthetic cases in golden/golden_cases.h, computed by the reference.
// Run only on purpose, after a change that is meant to change outputs:
//   ./build/golden/make_golden golden/synthetic.json
// Tests never run this; they compare against the committed file.
#include <fstream>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "golden/golden_cases.h"
#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "reference/generate.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_golden OUT.json\n";
    return 2;
  }
  nlohmann::ordered_json out;
  out["generator"] = "golden/make_golden.cpp (astrai reference forward pass, greedy)";
  out["logit_tolerance"] = "relative 1e-5 (float32 with a different BLAS may differ in the last bits)";
  for (const auto& c : astrai::golden::synthetic_cases()) {
    const auto weights = astrai::make_synthetic_weights(c.config, c.seed);
    astrai::GenerateOptions options;
    options.max_new_tokens = c.max_new_tokens;
    const auto ids = astrai::generate(weights, c.prompt, options, astrai::argmax);
    astrai::DenseKVCache cache(c.config, 1);
    std::vector<astrai::BatchToken> batch;
    for (size_t i = 0; i < c.prompt.size(); ++i) batch.push_back({c.prompt[i], 0, int(i), i + 1 == c.prompt.size()});
    const auto logits = astrai::forward(weights, batch, cache);
    nlohmann::ordered_json pinned = nlohmann::ordered_json::object();
    for (int id : c.logit_ids) pinned[std::to_string(id)] = double(logits(0, size_t(id)));
    out["cases"].push_back({{"name", c.name}, {"greedy_ids", ids}, {"last_prompt_logits", pinned}});
  }
  std::ofstream file(argv[1]);
  file << std::setprecision(9) << out.dump(1) << "\n";
  std::cout << "wrote " << argv[1] << "\n";
  return file ? 0 : 1;
}
