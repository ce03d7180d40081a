// Stored outputs of synthetic models (golden/synthetic.json, written by
// golden/make_golden.cpp, see golden/README.md): a change to the model math
// that moves a greedy token or a logit shows up here. Logits match to 1e-5
// relative, since another BLAS build or kernel may round the last bits of a
// dot product differently. Token ids match exactly, which is sound because the
// test asserts that every step's top-two logit gap exceeds that same rounding
// bound, so no BLAS kernel's rounding can change an argmax.
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "golden/golden_cases.h"
#include "reference/dense_kv_cache.h"
#include "reference/forward.h"
#include "reference/generate.h"
#include "tests/support/greedy_margins.h"
#include "tests/support/shared_data.h"

using namespace astrai;

TEST_CASE("synthetic models reproduce golden/synthetic.json", "[golden]") {
  const auto path = astrai::test::source_root() / "golden" / "synthetic.json";
  REQUIRE(std::filesystem::exists(path));
  const auto json = nlohmann::json::parse(std::ifstream(path));
  const auto cases = golden::synthetic_cases();
  REQUIRE(json.at("cases").size() == cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto& want = json.at("cases")[i];
    INFO("case " << c.name);
    REQUIRE(want.at("name") == c.name);
    const auto weights = make_synthetic_weights(c.config, c.seed);
    GenerateOptions options;
    options.max_new_tokens = c.max_new_tokens;
    std::vector<test::GreedyStep> steps;
    const auto ids = generate(weights, c.prompt, options, test::recording_argmax(steps));
    REQUIRE(test::decided_steps(steps, 1e-5) == steps.size());  // the premise of the exact comparison
    CHECK(ids == want.at("greedy_ids").get<std::vector<int>>());
    DenseKVCache cache(c.config, 1);
    std::vector<BatchToken> batch;
    for (size_t p = 0; p < c.prompt.size(); ++p) batch.push_back({c.prompt[p], 0, int(p), p + 1 == c.prompt.size()});
    const auto logits = forward(weights, batch, cache);
    for (int id : c.logit_ids) {
      const double expected = want.at("last_prompt_logits").at(std::to_string(id));
      CHECK(double(logits(0, size_t(id))) == Approx(expected).epsilon(1e-5).margin(1e-6));
    }
  }
}
