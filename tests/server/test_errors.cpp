// Every error the API gives: 422 validation (FastAPI's detail shape, naming
// the field), 400 for a prompt longer than the context, 413 for a body over
// the limit, 503 with Retry-After when the queue is full. After each, the
// server goes on serving.
#include <atomic>
#include <thread>

#include <catch2/catch.hpp>

#include "engine/scheduler/prompt_limit.h"
#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {

// The one error of a 422 body, checked against loc and type.
void check_422(const Reply& reply, const json& loc, const std::string& type) {
  INFO(reply.body);
  REQUIRE(reply.status == 422);
  const json body = reply.body_json();
  REQUIRE(body["detail"].is_array());
  bool found = false;
  for (const json& e : body["detail"]) {
    CHECK(e["msg"].is_string());
    CHECK_FALSE(e["msg"].get<std::string>().empty());
    if (e["loc"] == loc && e["type"] == type) found = true;
  }
  CHECK(found);
}

json with(json body, const std::string& key, const json& value) {
  body[key] = value;
  return body;
}

json with_message(json body, const json& message) {
  body["messages"] = json::array({message});
  return body;
}

}  // namespace

TEST_CASE("422: each invalid field is named, for both protocols", "[errors][validation]") {
  TestServer server;
  struct Protocol {
    const char* path;
    json body;
  };
  for (const Protocol& p : {Protocol{"/v1/chat/completions", openai_body("Hi", 4)},
                            Protocol{"/v1/messages", anthropic_body("Hi", 4)}}) {
    INFO(p.path);
    json no_messages = p.body;
    no_messages.erase("messages");
    check_422(post(server, p.path, no_messages), {"body", "messages"}, "missing");
    check_422(post(server, p.path, with(p.body, "messages", "Hi")), {"body", "messages"}, "list_type");
    check_422(post(server, p.path, with(p.body, "messages", json::array())), {"body", "messages"}, "too_short");
    check_422(post(server, p.path, with(p.body, "messages", json::array({"Hi"}))), {"body", "messages", 0},
              "dict_type");
    check_422(post(server, p.path, with_message(p.body, {{"content", "Hi"}})), {"body", "messages", 0, "role"},
              "missing");
    check_422(post(server, p.path, with_message(p.body, {{"role", "wizard"}, {"content", "Hi"}})),
              {"body", "messages", 0, "role"}, "literal_error");
    check_422(post(server, p.path, with_message(p.body, {{"role", 3}, {"content", "Hi"}})),
              {"body", "messages", 0, "role"}, "string_type");
    check_422(post(server, p.path, with_message(p.body, {{"role", "user"}})), {"body", "messages", 0, "content"},
              "missing");
    check_422(post(server, p.path, with_message(p.body, {{"role", "user"}, {"content", ""}})),
              {"body", "messages", 0, "content"}, "string_too_short");
    check_422(post(server, p.path, with_message(p.body, {{"role", "user"}, {"content", 42}})),
              {"body", "messages", 0, "content"}, "string_type");
    check_422(post(server, p.path,
                   with_message(p.body, {{"role", "user"},
                                         {"content", json::array({{{"type", "image"}, {"text", "x"}}})}})),
              {"body", "messages", 0, "content", 0, "type"}, "literal_error");
    check_422(post(server, p.path, with(p.body, "temperature", -0.5)), {"body", "temperature"}, "greater_than_equal");
    check_422(post(server, p.path, with(p.body, "temperature", "hot")), {"body", "temperature"}, "float_type");
    check_422(post(server, p.path, with(p.body, "top_p", 0)), {"body", "top_p"}, "greater_than");
    check_422(post(server, p.path, with(p.body, "top_p", 1.5)), {"body", "top_p"}, "less_than_equal");
    check_422(post(server, p.path, with(p.body, "top_k", -1)), {"body", "top_k"}, "greater_than_equal");
    check_422(post(server, p.path, with(p.body, "top_k", 2.5)), {"body", "top_k"}, "int_from_float");
    check_422(post(server, p.path, with(p.body, "max_tokens", 0)), {"body", "max_tokens"}, "greater_than_equal");
    check_422(post(server, p.path, with(p.body, "max_tokens", "ten")), {"body", "max_tokens"}, "int_type");
    check_422(post(server, p.path, with(p.body, "stream", "yes")), {"body", "stream"}, "bool_type");
    check_422(post(server, p.path, with(p.body, "seed", "lucky")), {"body", "seed"}, "int_type");
    check_422(post(server, p.path, with(p.body, "ignore_eos", 1)), {"body", "ignore_eos"}, "bool_type");
    check_422(post(server, p.path, std::string("[1, 2]")), {"body"}, "dict_type");
  }
  // Protocol-specific fields.
  check_422(post(server, "/v1/chat/completions", with(openai_body("Hi", 4), "stop", json::array({""}))),
            {"body", "stop", 0}, "string_too_short");
  check_422(post(server, "/v1/chat/completions", with(openai_body("Hi", 4), "stop", 5)), {"body", "stop"},
            "list_type");
  check_422(post(server, "/v1/chat/completions", with(openai_body("Hi", 4), "n", 0)), {"body", "n"},
            "greater_than_equal");
  check_422(post(server, "/v1/chat/completions", with(openai_body("Hi", 4), "max_completion_tokens", 0)),
            {"body", "max_completion_tokens"}, "greater_than_equal");
  check_422(post(server, "/v1/messages", with(anthropic_body("Hi", 4), "stop_sequences", "END")),
            {"body", "stop_sequences"}, "list_type");
  check_422(post(server, "/v1/messages", with(anthropic_body("Hi", 4), "system", "")), {"body", "system"},
            "string_too_short");
  check_422(post(server, "/v1/messages", with_message(anthropic_body("Hi", 4), {{"role", "system"}, {"content", "x"}})),
            {"body", "messages", 0, "role"}, "literal_error");

  // Several problems are reported together.
  const Reply many = post(server, "/v1/messages",
                          with(with(anthropic_body("Hi", 4), "temperature", -1), "top_k", -1));
  CHECK(many.body_json()["detail"].size() == 2);
  // And the server still serves.
  CHECK(post(server, "/v1/messages", anthropic_body("Hi", 4)).status == 200);
}

TEST_CASE("422 json_invalid for a body that is not JSON", "[errors][validation]") {
  TestServer server;
  for (const char* path : {"/v1/chat/completions", "/v1/messages"}) {
    for (const std::string& body : {std::string("not json"), std::string("{\"messages\": ["), std::string("")}) {
      const Reply reply = post(server, path, body);
      INFO(path << " " << body << " -> " << reply.body);
      REQUIRE(reply.status == 422);
      const json detail = reply.body_json()["detail"];
      REQUIRE(detail.size() == 1);
      CHECK(detail[0]["type"] == "json_invalid");
      CHECK(detail[0]["loc"][0] == "body");
      CHECK(detail[0]["loc"][1].is_number_integer());
    }
  }
}

TEST_CASE("a prompt that fills the context gets one token; one token more is refused (the scheduler's rule)",
          "[errors]") {
  // engine/scheduler/prompt_limit.h: at most `context` prompt tokens, as the
  // sequential loop allows; the server and the scheduler share the rule.
  TestServer server;  // context 256
  const auto tokens_of = [&](const std::string& text) {
    return server.model()->encode({ChatMessage{ChatRole::User, text}}).size();
  };
  // Grow the message a word, then a letter at a time, to exactly 256 and 257 prompt tokens.
  std::string text;
  for (int i = 0; tokens_of(text + " w" + std::to_string(i)) < 250; ++i) text += " w" + std::to_string(i);
  std::string exact, over;
  for (int i = 0; i < 200 && (exact.empty() || over.empty()); ++i) {
    text += i % 2 ? " a" : " b";
    if (tokens_of(text) == 256) exact = text;
    if (tokens_of(text) == 257) over = text;
  }
  REQUIRE_FALSE(exact.empty());
  REQUIRE_FALSE(over.empty());
  const Reply fits = post(server, "/v1/chat/completions", openai_body(exact, 4));
  REQUIRE(fits.status == 200);
  const json body = fits.body_json();
  CHECK(body["usage"]["prompt_tokens"] == 256);
  CHECK(body["usage"]["completion_tokens"] == 1);
  CHECK(body["choices"][0]["finish_reason"] == "length");
  const Reply refused = post(server, "/v1/chat/completions", openai_body(over, 4));
  CHECK(refused.status == 400);
  CHECK(refused.body_json()["error"]["code"] == "context_length_exceeded");
  CHECK(prompt_too_long(256, 256) == std::nullopt);
  CHECK(prompt_too_long(257, 256).has_value());
}

TEST_CASE("400 when the prompt does not fit the context, saying how many tokens", "[errors]") {
  TestServer server;  // context 256
  // Short enough in bytes that only tokenizing tells (see the next test):
  // '~' has no merges in the synthetic vocabulary, one token a byte.
  const std::string long_text(300, '~');
  REQUIRE(long_text.size() <= server.model()->max_token_bytes * 256);
  const size_t prompt_tokens = server.engine().tokenize(long_text).size();
  REQUIRE(prompt_tokens >= 256);
  const Reply openai = post(server, "/v1/chat/completions", openai_body(long_text, 4));
  CHECK(openai.status == 400);
  const json error = openai.body_json()["error"];
  CHECK(error["type"] == "invalid_request_error");
  CHECK(error["code"] == "context_length_exceeded");
  const std::string message = error["message"];
  CHECK(message.find(std::to_string(prompt_tokens) + " tokens") != std::string::npos);
  CHECK(message.find("256") != std::string::npos);

  const Reply anthropic = post(server, "/v1/messages", anthropic_body(long_text, 4));
  CHECK(anthropic.status == 400);
  CHECK(anthropic.body_json()["type"] == "error");
  CHECK(anthropic.body_json()["error"]["type"] == "invalid_request_error");
  CHECK(anthropic.body_json()["error"]["message"] == message);
}

TEST_CASE("A prompt whose bytes alone overflow the context is refused before it is tokenized", "[errors]") {
  TestServer server;  // context 256
  const size_t longest = server.model()->max_token_bytes;
  // One byte more than 256 tokens of the longest piece could hold: at least
  // 257 tokens, whatever the text. The message says "at least", which only
  // the byte bound gives (tokenized, the count would be exact).
  const std::string text(longest * 256 + 1, 'a');
  for (const char* path : {"/v1/chat/completions", "/v1/messages"}) {
    INFO(path);
    const Reply reply = post(server, path, std::string(path) == "/v1/messages" ? anthropic_body(text, 4)
                                                                               : openai_body(text, 4));
    CHECK(reply.status == 400);
    const json body = reply.body_json();
    const std::string message = body["error"]["message"];
    CHECK(message.find("at least 257 tokens") != std::string::npos);
    CHECK(message.find("256") != std::string::npos);
  }
  // A prompt the bound cannot decide is tokenized and counted exactly.
  // ('~' has no merges in the synthetic vocabulary: one token a byte.)
  const std::string words(300, '~');
  REQUIRE(server.engine().tokenize(words).size() > 256);
  REQUIRE(words.size() <= longest * 256);
  const Reply near = post(server, "/v1/chat/completions", openai_body(words, 4));
  CHECK(near.status == 400);
  CHECK(near.body_json()["error"]["message"].get<std::string>().find("at least") == std::string::npos);
}

TEST_CASE("413 for a body over --max-body-bytes; at the limit it is read", "[errors]") {
  TestServerOptions options;
  options.max_body_bytes = 2048;
  TestServer server(options);
  json body = openai_body("", 2);
  const std::string skeleton = body.dump();
  body["messages"][0]["content"] = std::string(2048 - skeleton.size(), 'a');
  const std::string at_limit = body.dump();
  REQUIRE(at_limit.size() == 2048);
  CHECK(post(server, "/v1/chat/completions", at_limit).status != 413);

  body["messages"][0]["content"] = std::string(4096, 'a');
  const Reply over = post(server, "/v1/chat/completions", body);
  CHECK(over.status == 413);
  CHECK(over.body_json()["detail"].get<std::string>().find("2048") != std::string::npos);
  CHECK(get(server, "/health").status == 200);
}

// The issue 37 burst: six simultaneous requests to --max-running 1
// --max-waiting 1 must find room for two (one runs, one waits), whether the
// scheduler has already moved the first to running or not (it used to count
// the first as waiting until then, and on a loaded machine five of six got
// 503). The executor is paused, so nothing finishes during the burst; which
// two requests win the race does not matter, only how many. On an idle
// machine the loop usually moves the first request before the others
// arrive, so this end-to-end check rarely meets the old bug: the engine test
// "Admission: running places plus the waiting bound, ..." holds the loop at
// that moment and fails on the old count every time.
TEST_CASE("A burst of six requests to --max-running 1 --max-waiting 1: two served, four 503", "[errors]") {
  TestServerOptions options;
  options.max_running = 1;
  options.max_waiting = 1;
  TestServer server(options);
  server.executor().pause();
  std::vector<Reply> replies(6);
  std::atomic<int> answered = 0;
  std::vector<std::jthread> clients;
  for (size_t i = 0; i < replies.size(); ++i)
    clients.emplace_back([&, i] {
      replies[i] = try_post(server, "/v1/chat/completions", openai_body("burst " + std::to_string(i), 3));
      ++answered;
    });
  // The refusals come back at once; the admitted requests wait at the paused
  // executor. Four answers while paused: a fifth would be a third admission
  // refused late or a fourth refusal, both caught below. (The waits detect a
  // hang; they are no speed claim.)
  for (int i = 0; i < 60000 && answered < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CHECK(answered == 4);
  CHECK(server.engine().get_stats().total_tasks == 2);
  server.executor().resume();
  for (auto& c : clients) c.join();
  int served = 0, refused = 0;
  for (const Reply& r : replies) {
    INFO(r.status << " " << r.body);
    served += r.status == 200;
    refused += r.status == 503;
  }
  CHECK(served == 2);
  CHECK(refused == 4);
}

TEST_CASE("503 with Retry-After when the waiting queue is full", "[errors]") {
  TestServerOptions options;
  options.max_running = 1;
  options.max_waiting = 1;
  TestServer server(options);
  server.executor().pause();
  // A runs (held at the paused executor), B waits, C finds the queue full.
  Reply a, b;
  std::jthread first([&] { a = try_post(server, "/v1/chat/completions", openai_body("first", 3)); });
  server.executor().wait_until_blocked();
  std::jthread second([&] { b = try_post(server, "/v1/messages", anthropic_body("second", 3)); });
  // total_tasks counts submissions at once (the other figures are published
  // after each step, and the scheduler is held inside A's step).
  for (int i = 0; i < 60000 && server.engine().get_stats().total_tasks < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(server.engine().get_stats().total_tasks == 2);

  const Reply openai = post(server, "/v1/chat/completions", openai_body("third", 3));
  CHECK(openai.status == 503);
  CHECK(openai.header("Retry-After") == "1");
  CHECK(openai.body_json()["error"]["code"] == "server_overloaded");
  const Reply anthropic = post(server, "/v1/messages", anthropic_body("third", 3, true));
  CHECK(anthropic.status == 503);
  CHECK(anthropic.header("Retry-After") == "1");
  CHECK(anthropic.body_json()["error"]["type"] == "overloaded_error");

  server.executor().resume();
  first.join();
  second.join();
  CHECK(a.error == "");
  CHECK(a.status == 200);
  CHECK(b.error == "");
  CHECK(b.status == 200);
  CHECK(server.wait_until_idle()["total_tasks"] == 2);
}

}  // namespace astrai::test
