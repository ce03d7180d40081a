// Stop sequences and the streaming APIs: a stop string ends a request at the
// token that completes it and never shows in its text, and every way of
// receiving text (wait(), next_piece(), on_token, the multi-stream handle,
// generate() of one prompt or of a list, generate_async's future) agrees.
#include <algorithm>
#include <future>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/engine/scheduler/engine_harness.h"
#include "tests/engine/scheduler/reference_oracle.h"

namespace {

using namespace astrai;
using namespace astrai::test;

bool printable(char c) { return c >= ' ' && c <= '~'; }

// A stop sequence found in the reference's own output, spanning the boundary
// between two tokens when it can (the case where text must be held back), or
// "" when the output has no printable ASCII character at all.
std::string stop_from_output(const std::vector<std::string>& bytes) {
  for (size_t j = bytes.size() / 2; j < bytes.size(); ++j)
    if (j > 0 && !bytes[j - 1].empty() && !bytes[j].empty() && printable(bytes[j - 1].back()) &&
        printable(bytes[j].front()))
      return std::string{bytes[j - 1].back(), bytes[j].front()};
  for (const auto& b : bytes)
    for (char c : b)
      if (printable(c)) return std::string(1, c);
  return "";
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string all;
  for (const auto& p : pieces) all += p;
  return all;
}

}  // namespace

TEST_CASE("A stop sequence ends the request at the token completing it and never shows in the text",
          "[engine][stop]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(909);
  std::vector<PlannedRequest> requests;
  for (int attempt = 0; attempt < 40 && requests.size() < 10; ++attempt) {
    PlannedRequest r;
    r.prompt = random_prompt(rng, 1 + attempt % 20);
    r.max_tokens = 40;
    r.sampling.temperature = attempt % 2 ? 1.0f : 0.0f;
    r.sampling.seed = uint64_t(attempt);
    r.ignore_eos = true;
    std::vector<PlannedRequest> one{r};
    compute_expected(one);
    const std::string stop = stop_from_output(token_bytes(*m.tokenizer, r.prompt, one[0].expected));
    if (stop.empty()) continue;
    // The found stop, one that never appears, and one that contains the found one (so never matches first).
    one[0].stop = {"~~never~~", stop, stop + "~~never~~"};
    requests.push_back(one[0]);
  }
  REQUIRE(requests.size() == 10);
  for (const EngineConfig& config : {contiguous_config(4, 8), paged_config(3, 5, 30)}) {
    InferenceEngine engine(m.weights, m.tokenizer, config);
    auto logs = run_requests(engine, requests, Submission::Together);
    check_outputs(requests, logs);  // tokens cut at the stop, text by the stop rule, streams agree
    for (size_t i = 0; i < requests.size(); ++i) {
      const TaskOutput out = output_of(*logs[i]);
      INFO("request " << i << ", stop '" << requests[i].stop[1] << "'");
      CHECK(out.reason == FinishReason::StopSequence);
      CHECK(out.stop_sequence == requests[i].stop[1]);
      CHECK(out.tokens.size() < requests[i].expected.size() + 1);
    }
    require_all_free(engine);
  }
}

TEST_CASE("generate() of a list gives what generate() gives each prompt alone, which is the reference's text",
          "[engine][api]") {
  const TinyModel& m = tiny_model();
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(3, 8));
  const std::vector<std::string> prompts = {"Once upon a time", "", "The cat sat", "x", "Hello, hello, hello world"};
  GenerateParams options;
  options.max_tokens = 24;
  for (const float temperature : {0.0f, 1.0f}) {
    options.sampling.temperature = temperature;
    options.sampling.seed = 12345;
    std::vector<std::string> together;
    {
      Watchdog guard("generate(list)");
      together = engine.generate(prompts, options);
    }
    REQUIRE(together.size() == prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      INFO("prompt '" << prompts[i] << "', temperature " << temperature);
      std::string alone;
      {
        Watchdog guard("generate(prompt)");
        alone = engine.generate(prompts[i], options);
      }
      CHECK(together[i] == alone);
      const std::vector<int> ids = engine.tokenize(prompts[i]);
      const auto tokens = reference_tokens(*m.weights, *m.tokenizer, ids, options.max_tokens, options.sampling);
      CHECK(alone == oracle_sanitize(joined(token_bytes(*m.tokenizer, ids, tokens))));
    }
  }
  require_all_free(engine);
}

TEST_CASE("A text stream's pieces, read while the request runs, concatenate to its whole text", "[engine][api]") {
  const TinyModel& m = tiny_model();
  InferenceEngine engine(m.weights, m.tokenizer, contiguous_config(2, 4));
  GenerateParams options;
  options.max_tokens = 40;
  options.sampling.temperature = 0.0f;
  // Keep others running beside the stream.
  auto others = engine.generate_stream(std::vector<std::string>{"a", "b", "c"}, options);
  for (const std::string& stop : std::vector<std::string>{"", "e", " t"}) {
    options.stop = stop.empty() ? std::vector<std::string>{} : std::vector<std::string>{stop};
    TextStreamHandle stream = engine.generate_stream("Once upon a time there was", options);
    std::string streamed;
    {
      Watchdog guard("TextStreamHandle::next");
      while (auto piece = stream.next()) streamed += *piece;
    }
    const auto out = stream.result().wait_for(kWaitTimeout);
    REQUIRE(out.has_value());
    INFO("stop '" << stop << "'");
    CHECK(streamed == out->text);
    if (!stop.empty()) CHECK(out->text.find(stop) == std::string::npos);
  }
  {
    Watchdog guard("MultiStreamHandle::next");
    while (others.next()) {
    }
  }
  require_all_free(engine);
}

TEST_CASE("The multi-stream handle delivers each request's pieces, which concatenate to its text",
          "[engine][api]") {
  const TinyModel& m = tiny_model();
  InferenceEngine engine(m.weights, m.tokenizer, paged_config(2, 6));
  const std::vector<std::string> prompts = {"One", "Two two", "", "Four four four four", "Five"};
  GenerateParams options;
  options.max_tokens = 20;
  options.sampling.temperature = 0.0f;
  options.stop = {"q"};
  std::map<size_t, std::string> texts;
  {
    Watchdog guard("MultiStreamHandle::next");
    MultiStreamHandle stream = engine.generate_stream(prompts, options);
    while (auto piece = stream.next()) {
      REQUIRE(piece->index < prompts.size());
      CHECK(!piece->text.empty());
      texts[piece->index] += piece->text;
    }
    CHECK(!stream.next().has_value());  // stays ended
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    INFO("prompt " << i);
    Watchdog guard("generate(prompt)");
    CHECK(texts[i] == engine.generate(prompts[i], options));
  }
  require_all_free(engine);
}

TEST_CASE("A chat format's end-of-turn token ends a request and is never text, unless it is a normal piece",
          "[engine][stop]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(4242);
  // A greedy request's reference output without EOS or BOS in it; its 4th
  // token becomes the end-of-turn token.
  std::vector<PlannedRequest> plan{PlannedRequest{}};
  auto ends_early = [&](const std::vector<int>& ids) {
    return std::count_if(ids.begin(), ids.end(), [&](int id) {
      return id == m.tokenizer->eos_id() || id == m.tokenizer->bos_id();
    }) > 0;
  };
  for (int attempt = 0; attempt < 50 && (plan[0].expected.empty() || ends_early(plan[0].expected)); ++attempt) {
    plan[0].prompt = random_prompt(rng, 6);
    plan[0].max_tokens = 12;
    plan[0].sampling.temperature = 0.0f;  // greedy
    plan[0].ignore_eos = true;
    compute_expected(plan);
  }
  const std::vector<int> expected = plan[0].expected;
  REQUIRE(expected.size() == 12);
  REQUIRE_FALSE(ends_early(expected));
  const int eot = expected[3];
  // The stop must come at its first occurrence, and the tokens before it must be ordinary ones.
  const auto first = std::find(expected.begin(), expected.end(), eot);
  const int stop_index = int(first - expected.begin());
  REQUIRE(eot > 2);

  for (const TokenType type : {TokenType::Control, TokenType::UserDefined, TokenType::Normal}) {
    for (const std::string spelling : {"<|im_end|>", "<|eot_id|>", "<end_of_turn>"}) {
      std::vector<std::string> pieces = m.tokenizer->pieces();
      std::vector<TokenType> types = m.tokenizer->types();
      pieces[size_t(eot)] = spelling;
      types[size_t(eot)] = type;
      auto tokenizer = std::make_shared<const Tokenizer>(pieces, m.tokenizer->scores(), types);
      const bool ends = type != TokenType::Normal;
      INFO(spelling << (ends ? " (control or user-defined)" : " (normal)"));
      CHECK(std::count(tokenizer->end_of_generation_ids().begin(), tokenizer->end_of_generation_ids().end(), eot) ==
            (ends ? 1 : 0));

      InferenceEngine engine(m.weights, tokenizer, contiguous_config(2, 8));
      GenerationRequest request;
      request.prompt_ids = plan[0].prompt;
      request.max_tokens = 12;
      request.sampling.temperature = 0.0f;
      const TaskOutput out = engine.generate_with_request(std::move(request))->wait();
      if (ends) {
        CHECK(out.reason == FinishReason::Eos);
        CHECK(out.tokens == std::vector<int>(expected.begin(), expected.begin() + stop_index + 1));
        // The text is what the same request gives when cut just before the stop.
        REQUIRE(stop_index >= 1);  // holds for this seed; a stop at once would leave nothing to compare
        GenerationRequest shorter;
        shorter.prompt_ids = plan[0].prompt;
        shorter.max_tokens = stop_index;
        shorter.sampling.temperature = 0.0f;
        const TaskOutput cut = engine.generate_with_request(std::move(shorter))->wait();
        CHECK(cut.reason == FinishReason::Length);
        CHECK(out.text == cut.text);
        CHECK(out.text.find(spelling) == std::string::npos);
      } else {
        CHECK(out.tokens == expected);
        CHECK(out.text.find(spelling) != std::string::npos);
      }
      require_all_free(engine);
    }
  }
}

TEST_CASE("generate_async's future gives what generate_with_request gives, with on_token streaming alongside",
          "[engine][api]") {
  const TinyModel& m = tiny_model();
  std::mt19937 rng(2718);
  const auto requests = random_requests(rng, 8, {.sampled_fraction = 0.5, .stop_fraction = 0.5});
  // A contiguous cache: no prefix hit, so the repeated request's cached_prompt_tokens is the same too.
  InferenceEngine engine(m.weights, m.tokenizer, contiguous_config(3, 8));
  auto as_request = [](const PlannedRequest& r) {
    GenerationRequest request;
    request.prompt_ids = r.prompt;
    request.max_tokens = r.max_tokens;
    request.sampling = r.sampling;
    request.stop = r.stop;
    return request;
  };
  // What each request's callbacks saw; read only once its future is ready,
  // which happens after its last callback returned.
  struct Seen {
    std::string text;
    size_t tokens = 0;
    int finishes = 0;
  };
  std::vector<Seen> seen(requests.size());
  std::vector<std::future<TaskOutput>> futures;
  for (size_t i = 0; i < requests.size(); ++i) {  // all at once, batched together
    GenerationRequest request = as_request(requests[i]);
    request.on_token = [&seen, i](const TokenEvent& e) {
      seen[i].text += e.text;
      if (e.token >= 0) ++seen[i].tokens;
    };
    request.on_finish = [&seen, i](const TaskOutput&) { ++seen[i].finishes; };
    futures.push_back(engine.generate_async(std::move(request)));
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    INFO("request " << i);
    REQUIRE(futures[i].wait_for(kWaitTimeout) == std::future_status::ready);
    const TaskOutput out = futures[i].get();
    const auto waited = engine.generate_with_request(as_request(requests[i]))->wait_for(kWaitTimeout);
    REQUIRE(waited.has_value());
    CHECK(out.error.empty());
    CHECK(out.tokens == waited->tokens);
    CHECK(out.text == waited->text);
    CHECK(out.reason == waited->reason);
    CHECK(out.stop_sequence == waited->stop_sequence);
    CHECK(out.prompt_tokens == waited->prompt_tokens);
    CHECK(out.cached_prompt_tokens == waited->cached_prompt_tokens);
    CHECK(seen[i].text == out.text);
    CHECK(seen[i].tokens == out.tokens.size());
    CHECK(seen[i].finishes == 1);  // on_finish ran before the future was ready
  }
  require_all_free(engine);
}

TEST_CASE("generate_async returns at once: its future is ready when the request ends, whatever on_finish does",
          "[engine][api]") {
  const TinyModel& m = tiny_model();
  InferenceEngine engine(m.weights, m.tokenizer, contiguous_config(1, 4));
  Gate gate;
  GenerationRequest request;
  request.prompt_ids = std::vector<int>{5, 6, 7};
  request.max_tokens = 3;
  request.sampling.temperature = 0.0f;
  request.on_token = gate.callback();
  request.on_finish = [](const TaskOutput&) { throw std::runtime_error("ignored"); };
  std::future<TaskOutput> future = engine.generate_async(std::move(request));
  gate.wait_entered();  // the loop stands still inside the first of 3 tokens
  CHECK(future.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
  gate.open();
  REQUIRE(future.wait_for(kWaitTimeout) == std::future_status::ready);
  const TaskOutput out = future.get();
  CHECK(out.reason == FinishReason::Length);
  CHECK(out.tokens.size() == 3);
  GenerationRequest refused;
  refused.prompt_ids = std::vector<int>{};
  // Refused at once, as generate_with_request refuses it.
  CHECK_THROWS_AS(engine.generate_async(std::move(refused)), std::invalid_argument);
  require_all_free(engine);
}
