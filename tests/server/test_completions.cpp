// POST /v1/completions over real HTTP. The oracle is the engine called
// directly on the same text (engine_alone: what `astrai generate --prompt`
// runs, BOS first, no chat template), greedy, so the server's text must equal
// it byte for byte: the same executor, prompt ids and argmax. A prompt of ids
// must equal its text's (the server tokenizes text exactly as the engine
// does); a list of prompts must equal each prompt asked alone.
#include <map>

#include <catch2/catch.hpp>

#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {


json completion_body(json prompt, int max_tokens, bool stream = false) {
  return {{"model", "tiny-test-model"}, {"prompt", std::move(prompt)}, {"max_tokens", max_tokens},
          {"temperature", 0},            {"stream", stream}};
}

// A stream joined per choice index: text, legacy logprobs, finish reason.
struct Joined {
  std::map<int, std::string> text;
  std::map<int, json> tokens, token_logprobs, text_offset;
  std::map<int, json> finish_reason;
  json usage = nullptr;
  bool done = false;
};

Joined join_stream(const std::string& stream) {
  Joined j;
  for (const SseEvent& e : parse_sse(stream)) {
    REQUIRE_FALSE(j.done);
    if (e.data == "[DONE]") {
      j.done = true;
      continue;
    }
    const json chunk = json::parse(e.data);
    CHECK(chunk["object"] == "text_completion");
    if (chunk["choices"].empty()) {
      j.usage = chunk["usage"];
      continue;
    }
    const json& c = chunk["choices"][0];
    const int index = c["index"];
    CHECK(j.finish_reason[index].is_null());  // nothing after a choice's end
    j.text[index] += c["text"].get<std::string>();
    if (!c["logprobs"].is_null())
      for (const char* key : {"tokens", "token_logprobs", "text_offset"})
        for (const json& v : c["logprobs"][key])
          (key == std::string("tokens") ? j.tokens : key == std::string("token_logprobs") ? j.token_logprobs
                                                                                           : j.text_offset)[index]
              .push_back(v);
    if (!c["finish_reason"].is_null()) j.finish_reason[index] = c["finish_reason"];
  }
  return j;
}

}  // namespace

TEST_CASE("Completions: a greedy completion equals the engine on the same text (astrai generate)", "[completions]") {
  TestServer server;
  for (const std::string prompt : {"Once upon a time", "", "a b c d e f g h"}) {
    INFO("prompt '" << prompt << "'");
    const TaskOutput alone = engine_alone(server.engine(), prompt, 20);
    const Reply reply = post(server, kCompletionsPath, completion_body(prompt, 20));
    REQUIRE(reply.status == 200);
    const json body = reply.body_json();
    CHECK(body["object"] == "text_completion");
    CHECK(body["id"].get<std::string>().rfind("cmpl-", 0) == 0);
    REQUIRE(body["choices"].size() == 1);
    CHECK(body["choices"][0]["index"] == 0);
    CHECK(body["choices"][0]["text"] == alone.text);
    CHECK(body["choices"][0]["logprobs"].is_null());
    CHECK(body["choices"][0]["finish_reason"] == (alone.reason == FinishReason::Length ? "length" : "stop"));
    CHECK(body["usage"]["prompt_tokens"] == server.engine().tokenize(prompt).size());
    CHECK(body["usage"]["completion_tokens"] == alone.tokens.size());
    CHECK(body["usage"]["total_tokens"] == server.engine().tokenize(prompt).size() + alone.tokens.size());
    CHECK(body["usage"]["prompt_tokens_details"]["cached_tokens"] == 0);  // contiguous cache: no sharing

    // Streamed, joined: the same text and ending.
    const Reply streamed = post(server, kCompletionsPath, completion_body(prompt, 20, true));
    REQUIRE(streamed.status == 200);
    const Joined j = join_stream(streamed.body);
    CHECK(j.done);
    CHECK(j.text.at(0) == alone.text);
    CHECK(j.finish_reason.at(0) == body["choices"][0]["finish_reason"]);
  }
}

TEST_CASE("Completions: token ids, lists of prompts and n", "[completions]") {
  TestServer server;
  const std::vector<std::string> texts = {"Once upon a time", "The cat sat", "x"};
  std::vector<std::string> expected;
  for (const std::string& t : texts) expected.push_back(engine_alone(server.engine(), t, 12).text);

  SECTION("a prompt of ids equals its text") {
    const Reply reply = post(server, kCompletionsPath, completion_body(server.engine().tokenize(texts[0]), 12));
    REQUIRE(reply.status == 200);
    CHECK(reply.body_json()["choices"][0]["text"] == expected[0]);
  }
  SECTION("a list of strings and a list of id lists: one choice each, in order, usage summed") {
    json ids = json::array();
    size_t prompt_tokens = 0;
    for (const std::string& t : texts) {
      ids.push_back(server.engine().tokenize(t));
      prompt_tokens += server.engine().tokenize(t).size();
    }
    for (const json& prompt : {json(texts), ids}) {
      for (const bool stream : {false, true}) {
        json request = completion_body(prompt, 12, stream);
        request["stream_options"] = {{"include_usage", true}};
        if (!stream) request.erase("stream_options");
        const Reply reply = post(server, kCompletionsPath, request);
        REQUIRE(reply.status == 200);
        if (stream) {
          const Joined j = join_stream(reply.body);
          for (size_t i = 0; i < texts.size(); ++i) CHECK(j.text.at(int(i)) == expected[i]);
          CHECK(j.usage["prompt_tokens"] == prompt_tokens);
        } else {
          const json body = reply.body_json();
          REQUIRE(body["choices"].size() == texts.size());
          for (size_t i = 0; i < texts.size(); ++i) {
            CHECK(body["choices"][i]["index"] == i);
            CHECK(body["choices"][i]["text"] == expected[i]);
          }
          CHECK(body["usage"]["prompt_tokens"] == prompt_tokens);
        }
      }
    }
  }
  SECTION("n choices of each prompt: index = prompt * n + choice, greedy choices all equal their prompt's") {
    json request = completion_body(json::array({texts[0], texts[1]}), 12);
    request["n"] = 2;
    const json body = post(server, kCompletionsPath, request).body_json();
    REQUIRE(body["choices"].size() == 4);
    for (int i = 0; i < 4; ++i) {
      CHECK(body["choices"][i]["index"] == i);
      CHECK(body["choices"][i]["text"] == expected[size_t(i / 2)]);
    }
    CHECK(body["usage"]["prompt_tokens"] ==
          server.engine().tokenize(texts[0]).size() + server.engine().tokenize(texts[1]).size());
  }
  SECTION("echo: the prompt's text first (an id prompt's decoded), streamed or not") {
    for (const bool stream : {false, true}) {
      json request = completion_body(json::array({server.engine().tokenize(texts[1])}), 12, stream);
      request["echo"] = true;
      const Reply reply = post(server, kCompletionsPath, request);
      REQUIRE(reply.status == 200);
      const std::string text = stream ? join_stream(reply.body).text.at(0) : reply.body_json()["choices"][0]["text"].get<std::string>();
      CHECK(text == texts[1] + expected[1]);
    }
  }
  SECTION("echo with several prompts and n > 1: each choice carries its own prompt's text, streamed or not") {
    // Choice i belongs to prompt i / n: echoing prompt i % n, or the first
    // prompt for all, or echoing once per prompt rather than per choice,
    // gives another text to some choice.
    for (const bool stream : {false, true}) {
      json request = completion_body(json::array({texts[0], texts[1]}), 12, stream);
      request["n"] = 3;
      request["echo"] = true;
      const Reply reply = post(server, kCompletionsPath, request);
      REQUIRE(reply.status == 200);
      const Joined j = stream ? join_stream(reply.body) : Joined{};
      const json body = stream ? json() : reply.body_json();
      if (!stream) REQUIRE(body["choices"].size() == 6);
      for (int i = 0; i < 6; ++i) {
        INFO("choice " << i << (stream ? " streamed" : " whole"));
        const std::string text = stream ? j.text.at(i) : body["choices"][i]["text"].get<std::string>();
        CHECK(text == texts[size_t(i / 3)] + expected[size_t(i / 3)]);  // greedy: every choice of a prompt alike
      }
    }
  }
}

TEST_CASE("Completions: legacy logprobs agree with the text, streamed and whole", "[completions][logprobs]") {
  TestServer server;
  json request = completion_body("Once upon a time", 16);
  request["logprobs"] = 3;
  const json body = post(server, kCompletionsPath, request).body_json();
  const json& lp = body["choices"][0]["logprobs"];
  const size_t n = body["usage"]["completion_tokens"];
  REQUIRE(lp["tokens"].size() == n);
  REQUIRE(lp["token_logprobs"].size() == n);
  REQUIRE(lp["top_logprobs"].size() == n);
  REQUIRE(lp["text_offset"].size() == n);
  // A token that is part of a UTF-8 character comes out as U+FFFD (3 bytes)
  // in `tokens`, and such tokens collapse into one key of a top_logprobs
  // dict: the byte checks hold for whole-character tokens only.
  auto whole = [](const std::string& t) { return t.find("\xEF\xBF\xBD") == std::string::npos; };
  bool all_whole = true;
  std::string joined;
  CHECK(lp["text_offset"][0] == 0);
  for (size_t i = 0; i < n; ++i) {
    const std::string token = lp["tokens"][i];
    all_whole = all_whole && whole(token);
    if (i + 1 < n && whole(token))  // text_offset counts the text's bytes before each token
      CHECK(lp["text_offset"][i + 1].get<size_t>() - lp["text_offset"][i].get<size_t>() == token.size());
    if (i + 1 < n) CHECK(lp["text_offset"][i + 1].get<size_t>() >= lp["text_offset"][i].get<size_t>());
    joined += token;
    CHECK(lp["token_logprobs"][i].get<double>() <= 0.0);
    CHECK(lp["top_logprobs"][i].size() <= 3);
    CHECK(lp["top_logprobs"][i].size() >= 1);
    // Greedy: the chosen token is the most likely one, so it heads the top
    // list (when no two of the three collapsed into one key).
    double best = -1e300;
    for (const auto& [t, logprob] : lp["top_logprobs"][i].items()) best = std::max(best, logprob.get<double>());
    if (lp["top_logprobs"][i].size() == 3) CHECK(lp["token_logprobs"][i].get<double>() == best);
  }
  if (all_whole && body["choices"][0]["finish_reason"] == "length") CHECK(joined == body["choices"][0]["text"]);

  request["stream"] = true;
  const Joined j = join_stream(post(server, kCompletionsPath, request).body);
  CHECK(j.tokens.at(0) == lp["tokens"]);
  CHECK(j.token_logprobs.at(0) == lp["token_logprobs"]);
  CHECK(j.text_offset.at(0) == lp["text_offset"]);
}

TEST_CASE("Completions: unsupported and malformed requests", "[completions][errors]") {
  TestServer server;
  SECTION("suffix and best_of: 400 naming them") {
    for (const char* field : {"suffix", "best_of"}) {
      json request = completion_body("hi", 4);
      request[field] = field == std::string("suffix") ? json("end") : json(2);
      const Reply reply = post(server, kCompletionsPath, request);
      CHECK(reply.status == 400);
      CHECK(reply.body_json()["error"]["type"] == "invalid_request_error");
      CHECK(reply.body_json()["error"]["message"].get<std::string>().find(field) != std::string::npos);
    }
  }
  SECTION("echo with logprobs: 400") {
    json request = completion_body("hi", 4);
    request["echo"] = true;
    request["logprobs"] = 1;
    CHECK(post(server, kCompletionsPath, request).status == 400);
  }
  SECTION("bad prompts: 422 at the prompt") {
    for (const json& prompt : {json(nullptr), json(3), json::array(), json::array({json::array()}),
                               json::array({"a", json::array({1})}), json::array({-1}), json::array({1.5}),
                               json::array({1000000})}) {
      INFO(prompt.dump());
      json request = completion_body(prompt, 4);
      if (prompt.is_null()) request.erase("prompt");
      const Reply reply = post(server, kCompletionsPath, request);
      CHECK(reply.status == 422);
      CHECK(reply.body_json()["detail"][0]["loc"][1] == "prompt");
    }
  }
  SECTION("logprobs out of range: 422") {
    json request = completion_body("hi", 4);
    request["logprobs"] = 21;
    CHECK(post(server, kCompletionsPath, request).status == 422);
  }
}

TEST_CASE("cached_tokens: the prompt tokens a prefix-cache hit served, as /stats counts them", "[completions][openai][anthropic][prefix]") {
  TestServerOptions options;
  options.cache = KVCacheKind::Paged;
  TestServer server(options);
  const std::string prompt(200, 'a');  // many pages long
  auto hits = [&] { return server.wait_until_idle()["prefix_hit_tokens"].get<int64_t>(); };
  struct Route {
    const char* path;
    json body;
    std::vector<std::string> cached_field;
  };
  const std::vector<Route> routes = {
      {kCompletionsPath, completion_body(prompt, 2), {"usage", "prompt_tokens_details", "cached_tokens"}},
      {"/v1/chat/completions", openai_body(prompt + "b", 2), {"usage", "prompt_tokens_details", "cached_tokens"}},
      {"/v1/messages", anthropic_body(prompt + "c", 2), {"usage", "cache_read_input_tokens"}},
  };
  for (const Route& route : routes) {
    INFO(route.path);
    for (int round = 0; round < 2; ++round) {
      const int64_t before = hits();
      const Reply reply = post(server, route.path, route.body);
      REQUIRE(reply.status == 200);
      json value = reply.body_json();
      for (const std::string& key : route.cached_field) value = value.at(key);
      const int64_t counted = hits() - before;
      CHECK(value.get<int64_t>() == counted);
      if (round == 1) CHECK(counted > 0);  // the same prompt again hits its own pages
    }
  }
}

// cached_tokens of an n-choice chat request whose prompt hit the prefix
// cache: the prompt is computed once (by choice 0; the other choices fork
// its pages), so the hit is counted once, as /stats counts it, whole and in
// the streamed usage; prompt_tokens counts the prompt once too. Reading the
// last choice's hit (a fork's: 0), or any one choice's but the first,
// passed the suite before.
TEST_CASE("cached_tokens with n > 1: the prompt's hit once, whole and streamed", "[openai][n][prefix]") {
  TestServerOptions options;
  options.cache = KVCacheKind::Paged;
  options.max_running = 4;
  TestServer server(options);
  const std::string prompt(200, 'a');  // many pages long
  auto hits = [&] { return server.wait_until_idle()["prefix_hit_tokens"].get<int64_t>(); };
  REQUIRE(post(server, "/v1/chat/completions", openai_body(prompt, 2)).status == 200);  // fills the cache
  for (const bool stream : {false, true}) {
    INFO((stream ? "streamed" : "whole"));
    json body = openai_body(prompt, 3, stream);
    body["n"] = 3;
    body["temperature"] = 1.0;
    body["seed"] = 5;
    if (stream) body["stream_options"] = {{"include_usage", true}};
    const int64_t before = hits();
    const Reply reply = post(server, "/v1/chat/completions", body);
    REQUIRE(reply.status == 200);
    const int64_t counted = hits() - before;
    REQUIRE(counted > 0);
    json usage;
    if (stream) {
      for (const SseEvent& e : parse_sse(reply.body))
        if (e.data != "[DONE]" && json::parse(e.data)["choices"].empty()) usage = json::parse(e.data)["usage"];
    } else {
      usage = reply.body_json()["usage"];
      CHECK(reply.body_json()["choices"].size() == 3);
    }
    REQUIRE(usage.is_object());
    CHECK(usage["prompt_tokens_details"]["cached_tokens"].get<int64_t>() == counted);
    CHECK(usage["prompt_tokens"].get<int64_t>() < 2 * counted);  // the prompt once, not once per choice
  }
}

}  // namespace astrai::test
