// A model's own sampling defaults (generation_config.json: temperature,
// top_p, top_k) are what a request gets for the fields it leaves out, over
// both protocols, as vLLM serves them; a field the request sets wins.
#include <catch2/catch.hpp>

#include "server/served_model.h"
#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {

// The engine called directly with `sampling`: the oracle for the text.
std::string engine_text(InferenceEngine& engine, const std::string& prompt, int max_tokens,
                        const SamplingParams& sampling) {
  GenerationRequest request;
  request.prompt = prompt;
  request.max_tokens = max_tokens;
  request.sampling = sampling;
  return engine.generate_with_request(std::move(request))->wait().text;
}

}  // namespace

TEST_CASE("generation_config.json's sampling fields become the served defaults", "[served_model]") {
  HfGenerationConfig generation;
  generation.temperature = 0.6f;
  generation.top_p = 0.9f;
  generation.top_k = 20;
  const SamplingParams defaults = sampling_defaults(generation);
  CHECK(defaults.temperature == 0.6f);
  CHECK(defaults.top_p == 0.9f);
  CHECK(defaults.top_k == 20);
  CHECK_FALSE(defaults.seed);

  // A field the file leaves out keeps the server's own default...
  HfGenerationConfig only_temperature;
  only_temperature.temperature = 0.7f;
  const SamplingParams partial = sampling_defaults(only_temperature);
  CHECK(partial.temperature == 0.7f);
  CHECK(partial.top_p == SamplingParams{}.top_p);
  CHECK(partial.top_k == SamplingParams{}.top_k);
  // ...and so does every field without the file (a GGUF, a llama2.c checkpoint).
  CHECK(sampling_defaults(std::nullopt).temperature == SamplingParams{}.temperature);
  CHECK(sampling_defaults(std::nullopt).top_k == SamplingParams{}.top_k);

  // do_sample is ignored, as vLLM ignores it: a server's callers choose
  // greedy decoding with temperature 0.
  HfGenerationConfig not_sampling = generation;
  not_sampling.do_sample = false;
  CHECK(sampling_defaults(not_sampling).temperature == 0.6f);
}

TEST_CASE("A request without sampling fields gets the model's defaults, over both protocols", "[served_model]") {
  // Greedy by default: without the model's defaults the server would sample
  // at temperature 1 from an unseeded generator, and 24 tokens of a random
  // model would match the greedy text only by a long chance.
  TestServerOptions options;
  options.default_sampling.temperature = 0;
  TestServer server(options);
  SamplingParams greedy;
  greedy.temperature = 0;
  const std::string expected = engine_text(server.engine(), "Once upon a time", 24, greedy);

  json openai = openai_body("Once upon a time", 24);
  openai.erase("temperature");
  const Reply a = post(server, "/v1/chat/completions", openai);
  REQUIRE(a.status == 200);
  CHECK(a.body_json()["choices"][0]["message"]["content"] == expected);

  json anthropic = anthropic_body("Once upon a time", 24);
  anthropic.erase("temperature");
  const Reply b = post(server, "/v1/messages", anthropic);
  REQUIRE(b.status == 200);
  CHECK(b.body_json()["content"][0]["text"] == expected);
}

TEST_CASE("A request's own sampling fields override the model's defaults", "[served_model]") {
  TestServerOptions options;
  options.default_sampling.temperature = 0;
  options.default_sampling.top_k = 3;
  TestServer server(options);
  // temperature from the request, top_k still the model's 3, seed from the request.
  SamplingParams sampled = options.default_sampling;
  sampled.temperature = 0.9f;
  sampled.seed = 77;
  const std::string expected = engine_text(server.engine(), "The cat", 16, sampled);

  json body = openai_body("The cat", 16);
  body["temperature"] = 0.9;
  body["seed"] = 77;
  const Reply reply = post(server, "/v1/chat/completions", body);
  REQUIRE(reply.status == 200);
  CHECK(reply.body_json()["choices"][0]["message"]["content"] == expected);
}

TEST_CASE("generation_config.json's max_new_tokens is the max_tokens of a request that sets none", "[served_model]") {
  TestServerOptions options;
  options.default_max_tokens = 7;
  TestServer server(options);
  const auto tokens_of = [&](const std::string& path, json body) {
    body["ignore_eos"] = true;  // the extension: exactly max_tokens tokens, whatever the random model draws
    const Reply reply = post(server, path, body);
    REQUIRE(reply.status == 200);
    const json usage = reply.body_json()["usage"];
    return usage.contains("completion_tokens") ? usage["completion_tokens"].get<int>() : usage["output_tokens"].get<int>();
  };
  json chat = openai_body("Once upon a time", 1);
  chat.erase("max_tokens");
  CHECK(tokens_of("/v1/chat/completions", chat) == 7);
  chat["max_tokens"] = 12;  // the request's own wins, above the default too
  CHECK(tokens_of("/v1/chat/completions", chat) == 12);
  const json responses = {{"model", "m"}, {"input", "Once upon a time"}, {"temperature", 0}};
  CHECK(tokens_of("/v1/responses", responses) == 7);
}

}  // namespace astrai::test
