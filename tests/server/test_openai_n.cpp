// OpenAI's `n` over real HTTP: n choices of one prompt. The oracle is the
// server itself asked n separate times: with a seed, choice i of an
// n-request samples with seed + i (the engine's rule, vLLM's too), so it must
// equal the single request with that seed token for token. The equality is
// exact, not approximate: both run the same reference executor on the same
// prompt rows and the same seeded generator, and a choice's rows do not
// depend on the batch it runs in (the engine's batching invariance, tested in
// tests/engine/scheduler/), nor on its prompt having been forked rather than
// computed (tests/engine/scheduler/test_choices.cpp).
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {

constexpr int kN = 3;

// A sampled (temperature 1), seeded request with logprobs and a stop
// sequence, so that each choice's text, stop and logprobs come into play. A
// common letter as the stop ends the choices after different numbers of
// tokens, so a usage that is not the sum of each choice's own shows.
json seeded_body(uint64_t seed, int n, bool stream) {
  json body = openai_body("Once upon a time", 24, stream);
  body["temperature"] = 1.0;
  body["seed"] = seed;
  body["n"] = n;
  body["logprobs"] = true;
  body["top_logprobs"] = 2;
  body["stop"] = json::array({"e"});
  if (stream) body["stream_options"] = {{"include_usage", true}};
  return body;
}

// What a stream says about each choice, joined per index.
struct StreamedChoice {
  int role_chunks = 0;
  std::string text;
  json logprobs = json::array();
  json finish_reason = nullptr;
  int chunks_after_finish = 0;
  bool content_before_role = false;
};
struct Streamed {
  std::map<int, StreamedChoice> choices;
  json usage = nullptr;
  bool done = false;
};

Streamed reassemble(const std::string& stream) {
  Streamed s;
  for (const SseEvent& e : parse_sse(stream)) {
    REQUIRE_FALSE(s.done);  // nothing after [DONE]
    if (e.data == "[DONE]") {
      s.done = true;
      continue;
    }
    const json chunk = json::parse(e.data);
    if (chunk["choices"].empty()) {
      s.usage = chunk["usage"];
      continue;
    }
    REQUIRE(chunk["choices"].size() == 1);  // one choice per chunk, as OpenAI streams n
    const json& c = chunk["choices"][0];
    StreamedChoice& choice = s.choices[c["index"].get<int>()];
    if (!choice.finish_reason.is_null()) ++choice.chunks_after_finish;
    if (c["delta"].contains("role")) ++choice.role_chunks;
    if (c["delta"].contains("content")) {
      if (choice.role_chunks == 0) choice.content_before_role = true;
      choice.text += c["delta"]["content"].get<std::string>();
    }
    if (c.contains("logprobs") && !c["logprobs"].is_null())
      for (const json& entry : c["logprobs"]["content"]) choice.logprobs.push_back(entry);
    if (!c["finish_reason"].is_null()) choice.finish_reason = c["finish_reason"];
  }
  return s;
}

// A seeded n-request (kN choices) and the kN single requests, seed + i
// each, that it must equal; the singles' usage summed as OpenAI sums n's.
struct Compared {
  std::vector<json> alone;  // alone[i]: the whole response to seed + i
  std::string body;         // the n-request's response body
  int prompt_tokens = 0;
  int completion_sum = 0;
};
Compared request_and_singles(const TestServer& server, uint64_t seed, bool stream) {
  Compared c;
  for (int i = 0; i < kN; ++i) {
    const Reply reply = post(server, kChatPath, seeded_body(seed + uint64_t(i), 1, false));
    REQUIRE(reply.status == 200);
    c.alone.push_back(reply.body_json());
    c.completion_sum += c.alone.back()["usage"]["completion_tokens"].get<int>();
  }
  c.prompt_tokens = c.alone[0]["usage"]["prompt_tokens"];
  const Reply reply = post(server, kChatPath, seeded_body(seed, kN, stream));
  REQUIRE(reply.status == 200);
  c.body = reply.body;
  return c;
}

}  // namespace

TEST_CASE("OpenAI n: choice i of a seeded request equals the single request with seed + i, whole", "[openai][n]") {
  TestServer server;
  const Compared c = request_and_singles(server, 1234, false);
  const std::vector<json>& alone = c.alone;
  const json whole = json::parse(c.body);
  REQUIRE(whole["choices"].size() == kN);
  std::set<std::string> texts;
  std::set<int> lengths;
  for (int i = 0; i < kN; ++i) {
    INFO("choice " << i);
    const json& got = whole["choices"][i];
    const json& want = alone[size_t(i)]["choices"][0];
    CHECK(got["index"] == i);
    CHECK(got["message"] == want["message"]);
    CHECK(got["finish_reason"] == want["finish_reason"]);
    CHECK(got["logprobs"] == want["logprobs"]);  // every entry, top_logprobs included
    CHECK_FALSE(got["logprobs"]["content"].empty());
    texts.insert(got["message"]["content"].get<std::string>());
    lengths.insert(alone[size_t(i)]["usage"]["completion_tokens"].get<int>());
  }
  // The seeds matter: were every choice drawn with one seed, all would be
  // equal and a server ignoring seed + i would pass the checks above.
  CHECK(texts.size() > 1);
  CHECK(lengths.size() > 1);
  // OpenAI's and vLLM's usage for n: the prompt once, the completions summed.
  CHECK(whole["usage"]["prompt_tokens"] == c.prompt_tokens);
  CHECK(whole["usage"]["completion_tokens"] == c.completion_sum);
  CHECK(whole["usage"]["total_tokens"] == c.prompt_tokens + c.completion_sum);
}

TEST_CASE("OpenAI n: a streamed n-request, joined per index, equals the single requests", "[openai][n][stream]") {
  TestServer server;
  const Compared c = request_and_singles(server, 77, true);
  const Streamed s = reassemble(c.body);
  CHECK(s.done);
  REQUIRE(s.choices.size() == kN);
  for (int i = 0; i < kN; ++i) {
    INFO("choice " << i);
    const StreamedChoice& got = s.choices.at(i);
    const json& want = c.alone[size_t(i)]["choices"][0];
    CHECK(got.role_chunks == 1);  // each choice opens with its role, once
    CHECK_FALSE(got.content_before_role);
    CHECK(got.chunks_after_finish == 0);  // the finish chunk is the choice's last
    CHECK(got.text == want["message"]["content"]);
    CHECK(got.finish_reason == want["finish_reason"]);
    CHECK(got.logprobs == want["logprobs"]["content"]);
  }
  REQUIRE(s.usage.is_object());
  CHECK(s.usage["prompt_tokens"] == c.prompt_tokens);
  CHECK(s.usage["completion_tokens"] == c.completion_sum);
}

TEST_CASE("OpenAI n: /stats counts the prompt once and the forks' positions", "[openai][n][stats]") {
  TestServerOptions options;
  options.cache = KVCacheKind::Paged;
  TestServer server(options);
  const json before = server.wait_until_idle();
  CHECK(before["forked_prompt_tokens"] == 0);
  const json reply = post(server, kChatPath, seeded_body(5, 4, false)).body_json();
  const json after = server.wait_until_idle();
  const int prompt = reply["usage"]["prompt_tokens"];
  // A fresh server has nothing cached, so the prompt is computed exactly
  // once, and each of the 3 other choices forks all of its positions.
  CHECK(after["prefill_tokens"].get<int>() - before["prefill_tokens"].get<int>() == prompt);
  CHECK(after["forked_prompt_tokens"].get<int>() - before["forked_prompt_tokens"].get<int>() == 3 * prompt);
  CHECK(after["total_tasks"].get<int>() - before["total_tasks"].get<int>() == 4);
  CHECK(after["cache"]["blocks_held"] == 0);
}

TEST_CASE("OpenAI n: bad values are 422 naming n; more than the running places is 400", "[openai][n][errors]") {
  TestServerOptions options;
  options.max_running = 4;
  TestServer server(options);
  for (const json& bad : {json(0), json(-1), json("2"), json(1.5), json(true)}) {
    INFO(bad.dump());
    json body = openai_body("Hi", 4);
    body["n"] = bad;
    const Reply reply = post(server, kChatPath, body);
    REQUIRE(reply.status == 422);
    bool named = false;
    const json detail = reply.body_json()["detail"];
    for (const json& e : detail) named = named || e["loc"] == json::array({"body", "n"});
    CHECK(named);
  }
  const json before = server.wait_until_idle();
  json body = openai_body("Hi", 4);
  body["n"] = 5;  // the 5 choices run together; the server runs 4 requests at once
  const Reply refused = post(server, kChatPath, body);
  CHECK(refused.status == 400);
  const std::string message = refused.body_json()["error"]["message"];
  CHECK(message.find("n = 5") != std::string::npos);
  CHECK(message.find("at most 4") != std::string::npos);
  CHECK(server.wait_until_idle()["total_tasks"] == before["total_tasks"]);  // nothing was queued
  body["n"] = 4;  // exactly the limit is served
  const Reply served = post(server, kChatPath, body);
  REQUIRE(served.status == 200);
  CHECK(served.body_json()["choices"].size() == 4);
  // Anthropic's Messages has no n: the field is ignored, as any unknown one.
  json anthropic = anthropic_body("Hi", 4);
  anthropic["n"] = 3;
  const Reply messages = post(server, "/v1/messages", anthropic);
  REQUIRE(messages.status == 200);
  CHECK(messages.body_json()["content"].size() == 1);
}

TEST_CASE("OpenAI n: a client that leaves a streamed n-request cancels every choice", "[openai][n][disconnect]") {
  TestServerOptions options;
  options.cache = KVCacheKind::Paged;
  TestServer server(options);
  const uint64_t tokens_before = server.wait_until_idle()["total_tokens"];
  json body = openai_body("Once upon a time", 200, true);
  body["n"] = kN;
  body["ignore_eos"] = true;  // every choice would run to max_tokens
  // The role chunks and a few tokens (or heartbeats), then the connection is
  // closed. The loop runs a few steps, then is held until the server has
  // noticed and cancelled, so that however slow the client's thread, no
  // choice can run on to its end first.
  const uint64_t cancels_before = server.engine().get_stats().cancel_requests;
  server.executor().pause();
  server.executor().allow(4);
  CHECK_FALSE(read_then_disconnect(server, kChatPath, body, 4).empty());
  server.wait_for_cancel_requests(cancels_before + kN);  // one cancel() per choice
  server.executor().resume();
  const json stats = server.wait_until_idle();
  CHECK(stats["active_tasks"] == 0);
  CHECK(stats["waiting_queue"] == 0);
  CHECK(stats["cache"]["blocks_held"] == 0);
  CHECK(stats["cache"]["tasks"] == 0);
  // All stopped early: fewer tokens than one choice alone would make, which
  // cancelling only some of the choices could not give (the others would
  // run to 200 each); the cut comes after a few tokens, the executor held
  // meanwhile.
  CHECK(stats["total_tokens"].get<uint64_t>() - tokens_before < 200);
  // The server goes on serving.
  CHECK(get(server, "/health").status == 200);
  const Reply next = post(server, kChatPath, openai_body("Hi", 4));
  CHECK(next.status == 200);
}

}  // namespace astrai::test
