// OpenAI's sampling and logprobs fields over real HTTP: logprobs against a
// float64 log-softmax of the reference model's raw logits written here, the
// penalties, bias, min_p and stop_token_ids carried to the engine exactly
// (the engine called directly is the oracle), every bad value a 422 naming
// its field, and Anthropic's metadata accepted and ignored.
#include <cmath>
#include <span>

#include <catch2/catch.hpp>

#include "reference/generate.h"
#include "reference/synthetic_model.h"
#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {


// The greedy reference loop on the test model, keeping each step's raw row.
struct RawSteps {
  std::vector<int> tokens;
  std::vector<std::vector<float>> rows;
};
RawSteps reference_steps(const InferenceEngine& engine, const std::string& prompt, int max_tokens) {
  const ModelWeights weights = make_synthetic_weights(tiny_config(256), 7);  // the fixture's model, rebuilt
  GenerateOptions options;
  options.max_new_tokens = max_tokens;
  options.stop_tokens = engine.tokenizer().end_of_generation_ids();
  RawSteps steps;
  const std::vector<int> ids = engine.tokenize(prompt);
  steps.tokens = generate(weights, ids, options, [&](std::span<const float> row) {
    steps.rows.emplace_back(row.begin(), row.end());
    return argmax(row);
  });
  return steps;
}

// log softmax(row)[i] in float64 (nothing shared with reference/sampling).
double log_softmax(const std::vector<float>& row, std::size_t i) {
  double max = row[0];
  for (float l : row) max = std::max(max, double(l));
  double sum = 0.0;
  for (float l : row) sum += std::exp(double(l) - max);
  return double(row[i]) - max - std::log(sum);
}

std::vector<int> bytes_of(const std::string& s) {
  std::vector<int> bytes;
  for (unsigned char b : s) bytes.push_back(b);
  return bytes;
}

void check_422(const Reply& reply, const json& loc, const std::string& type) {
  INFO(reply.body);
  REQUIRE(reply.status == 422);
  bool found = false;
  const json body = reply.body_json();  // (a loop over body_json()["detail"] would outlive the temporary)
  for (const json& e : body["detail"]) found = found || (e["loc"] == loc && e["type"] == type);
  CHECK(found);
}

json with(json body, const std::string& key, const json& value) {
  body[key] = value;
  return body;
}

}  // namespace

TEST_CASE("OpenAI: logprobs and top_logprobs are the log-softmax of the raw logits, whole and streamed",
          "[openai][logprobs]") {
  TestServer server;
  const int n = 10, top = 3;
  const json body = with(with(openai_body("Once upon a time", n), "logprobs", true), "top_logprobs", top);
  const Reply reply = post(server, kChatPath, body);
  REQUIRE(reply.status == 200);
  const json whole = reply.body_json();
  const json& content = whole["choices"][0]["logprobs"]["content"];
  const RawSteps steps = reference_steps(server.engine(), "Once upon a time", n);
  REQUIRE(content.size() == steps.tokens.size());
  int previous = server.engine().tokenize("Once upon a time").back();
  for (std::size_t t = 0; t < steps.tokens.size(); ++t) {
    INFO("token " << t);
    const json& entry = content[t];
    const std::string bytes = server.engine().tokenizer().decode_token(previous, steps.tokens[t]);
    CHECK(entry["bytes"].get<std::vector<int>>() == bytes_of(bytes));
    // float64 on both sides, summed in other orders: a few ulps of the row's
    // log-sum (|log p| <= 10 here), far below 1e-12; JSON carries doubles
    // with 17 digits, exactly.
    CHECK(std::abs(entry["logprob"].get<double>() - log_softmax(steps.rows[t], std::size_t(steps.tokens[t]))) <= 1e-12);
    REQUIRE(entry["top_logprobs"].size() == std::size_t(top));
    // Greedy: the chosen token is the most likely one, so it heads the list.
    CHECK(entry["top_logprobs"][0]["bytes"] == entry["bytes"]);
    for (int k = 1; k < top; ++k)
      CHECK(entry["top_logprobs"][k]["logprob"].get<double>() <= entry["top_logprobs"][k - 1]["logprob"].get<double>());
    previous = steps.tokens[t];
  }

  // Streamed: the chunks' entries, joined, are the whole response's.
  const Reply streamed = post(server, kChatPath, with(body, "stream", true));
  REQUIRE(streamed.status == 200);
  json entries = json::array();
  for (const SseEvent& e : parse_sse(streamed.body)) {
    if (e.data == "[DONE]") continue;
    const json chunk = json::parse(e.data);
    if (chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    if (choice.contains("logprobs"))
      for (const json& entry : choice["logprobs"]["content"]) entries.push_back(entry);
  }
  CHECK(entries == content);

  // Without logprobs: null, as OpenAI sends it.
  CHECK(post(server, kChatPath, openai_body("Once upon a time", 3)).body_json()["choices"][0]["logprobs"].is_null());
}

TEST_CASE("OpenAI: penalties, bias, min_p and stop_token_ids reach the engine as given", "[openai][penalties]") {
  TestServer server;
  const TaskOutput plain = engine_alone(server.engine(), "Once upon a time", 12);
  REQUIRE(plain.tokens.size() >= 4);
  json body = openai_body("Once upon a time", 12);
  body["presence_penalty"] = 0.5;
  body["frequency_penalty"] = 1.25;
  body["repetition_penalty"] = 1.5;
  body["min_p"] = 0.05;
  body["temperature"] = 0.8;
  body["top_k"] = 0;
  body["seed"] = 1234;
  body["logit_bias"] = {{std::to_string(plain.tokens[0]), -100}, {"7", 2.5}};
  body["stop_token_ids"] = json::array({plain.tokens[3]});
  const Reply reply = post(server, kChatPath, body);
  REQUIRE(reply.status == 200);

  GenerationRequest direct;  // the same request, to the engine
  direct.prompt = "Once upon a time";
  direct.max_tokens = 12;
  direct.sampling.temperature = 0.8f;
  direct.sampling.top_k = 0;
  direct.sampling.seed = 1234;
  direct.sampling.presence_penalty = 0.5f;
  direct.sampling.frequency_penalty = 1.25f;
  direct.sampling.repetition_penalty = 1.5f;
  direct.sampling.min_p = 0.05f;
  direct.sampling.logit_bias = {{plain.tokens[0], -100.0f}, {7, 2.5f}};
  direct.stop_token_ids = {plain.tokens[3]};
  const TaskOutput expected = server.engine().generate_with_request(direct)->wait();
  CHECK(reply.body_json()["choices"][0]["message"]["content"] == expected.text);
  CHECK(reply.body_json()["usage"]["completion_tokens"] == int(expected.tokens.size()));
  // The ban bites: the plain greedy first token never comes first now.
  CHECK(expected.tokens[0] != plain.tokens[0]);
}

TEST_CASE("OpenAI: bad sampling and logprobs fields are 422 naming the field", "[openai][errors]") {
  TestServer server;
  const json base = openai_body("hi", 2);
  const auto loc = [](auto... steps) { return json::array({"body", steps...}); };
  check_422(post(server, kChatPath, with(base, "presence_penalty", 2.5)), loc("presence_penalty"), "less_than_equal");
  check_422(post(server, kChatPath, with(base, "frequency_penalty", -3)), loc("frequency_penalty"), "greater_than_equal");
  check_422(post(server, kChatPath, with(base, "frequency_penalty", "x")), loc("frequency_penalty"), "float_type");
  check_422(post(server, kChatPath, with(base, "repetition_penalty", 0)), loc("repetition_penalty"), "greater_than");
  check_422(post(server, kChatPath, with(base, "min_p", 1.5)), loc("min_p"), "less_than_equal");
  check_422(post(server, kChatPath, with(base, "logit_bias", json::array())), loc("logit_bias"), "dict_type");
  check_422(post(server, kChatPath, with(base, "logit_bias", {{"abc", 1}})), loc("logit_bias", "abc"), "int_parsing");
  check_422(post(server, kChatPath, with(base, "logit_bias", {{"5", 101}})), loc("logit_bias", "5"), "less_than_equal");
  check_422(post(server, kChatPath, with(base, "logit_bias", {{"999999", 1}})), loc("logit_bias", "999999"), "less_than");
  check_422(post(server, kChatPath, with(base, "logprobs", "yes")), loc("logprobs"), "bool_type");
  check_422(post(server, kChatPath, with(with(base, "logprobs", true), "top_logprobs", 21)), loc("top_logprobs"),
            "less_than_equal");
  check_422(post(server, kChatPath, with(base, "top_logprobs", 2)), loc("top_logprobs"), "value_error");
  check_422(post(server, kChatPath, with(base, "stop_token_ids", json::array({-1}))), loc("stop_token_ids", 0),
            "greater_than_equal");
  check_422(post(server, kChatPath, with(base, "stop_token_ids", json::array({3, 999999}))), loc("stop_token_ids", 1),
            "less_than");
  // The edges are accepted.
  json edges = base;
  edges["presence_penalty"] = -2;
  edges["frequency_penalty"] = 2;
  edges["min_p"] = 1;
  edges["logit_bias"] = {{"3", -100}, {"4", 100}};
  edges["logprobs"] = true;
  edges["top_logprobs"] = 20;
  CHECK(post(server, kChatPath, edges).status == 200);
}

TEST_CASE("Anthropic: metadata and unknown fields are accepted and ignored", "[anthropic]") {
  TestServer server;
  const json plain = post(server, "/v1/messages", anthropic_body("Once upon a time", 6)).body_json();
  json body = anthropic_body("Once upon a time", 6);
  body["metadata"] = {{"user_id", "user-42"}};
  body["service_tier"] = "auto";
  const Reply reply = post(server, "/v1/messages", body);
  REQUIRE(reply.status == 200);
  CHECK(reply.body_json()["content"] == plain["content"]);
}

}  // namespace astrai::test
