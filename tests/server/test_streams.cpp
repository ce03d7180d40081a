// Streams under stress: a client that disconnects mid-stream (its task is
// cancelled and its cache freed while others go on), a client that stops
// reading (others are not held up), and 32 simultaneous greedy requests that
// each get exactly what they get alone.
#include <future>
#include <latch>
#include <thread>

#include <catch2/catch.hpp>

#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {

std::string streamed_text_openai(const std::string& stream) {
  std::string text;
  for (const auto& e : parse_sse(stream)) {
    if (e.data == "[DONE]") continue;
    const json c = json::parse(e.data);
    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content"))
      text += c["choices"][0]["delta"]["content"].get<std::string>();
  }
  return text;
}

std::string streamed_text_anthropic(const std::string& stream) {
  std::string text;
  for (const auto& e : parse_sse(stream))
    if (e.event == "content_block_delta") text += json::parse(e.data)["delta"]["text"].get<std::string>();
  return text;
}

}  // namespace

TEST_CASE("A client that disconnects mid-stream cancels its task; the others go on", "[stream][disconnect]") {
  TestServerOptions options;
  options.cache = KVCacheKind::Paged;
  TestServer server(options);
  const int long_tokens = 200;
  // A prompt that, alone, runs to max_tokens (the model emits no EOS before).
  std::string long_prompt;
  for (const char* candidate : {"Once upon a time", "The cat", "One day", "In the forest", "Tom and Sue", "Hello"}) {
    const json alone = post(server, "/v1/chat/completions", openai_body(candidate, long_tokens)).body_json();
    if (alone["choices"][0]["finish_reason"] == "length") {
      long_prompt = candidate;
      break;
    }
  }
  REQUIRE_FALSE(long_prompt.empty());
  const json other_alone = post(server, "/v1/messages", anthropic_body("The dog", 30)).body_json();
  const uint64_t tokens_before = server.wait_until_idle()["total_tokens"];

  // The loop runs a few steps, then is held until the server has noticed
  // the client gone (at its next write: a token, or the 50 ms heartbeat) and
  // cancelled, so that however slow the client's thread, the long stream
  // cannot run on to its end first.
  const uint64_t cancels_before = server.engine().get_stats().cancel_requests;
  server.executor().pause();
  server.executor().allow(4);
  std::string other_stream;
  std::jthread other([&] { other_stream = try_post(server, "/v1/messages", anthropic_body("The dog", 30, true)).body; });
  // Two chunks: the role chunk and the first text (or a heartbeat).
  const std::string got = read_then_disconnect(server, "/v1/chat/completions",
                                               openai_body(long_prompt, long_tokens, true), 2);
  CHECK_FALSE(got.empty());
  server.wait_for_cancel_requests(cancels_before + 1);
  server.executor().resume();
  other.join();

  const json stats = server.wait_until_idle();
  CHECK(stats["active_tasks"] == 0);
  CHECK(stats["waiting_queue"] == 0);
  CHECK(stats["cache"]["blocks_held"] == 0);  // the cancelled task's pages came back
  CHECK(stats["cache"]["tasks"] == 0);
  const uint64_t generated = stats["total_tokens"].get<uint64_t>() - tokens_before;
  const int other_tokens = other_alone["usage"]["output_tokens"];
  CHECK(generated < uint64_t(long_tokens + other_tokens));  // the long one stopped early
  // The other stream was untouched.
  CHECK(streamed_text_anthropic(other_stream) == other_alone["content"][0]["text"]);
}

TEST_CASE("A client that disconnects while queued is cancelled before it runs", "[stream][disconnect]") {
  TestServerOptions options;
  options.max_running = 1;
  TestServer server(options);
  server.executor().pause();
  Reply running;
  std::jthread first([&] { running = try_post(server, "/v1/chat/completions", openai_body("first", 5)); });
  server.executor().wait_until_blocked();
  // Queued behind it: the stream opens (role chunk), then the client leaves.
  read_then_disconnect(server, "/v1/chat/completions", openai_body("second", 50, true), 1);
  // The server notices at its next heartbeat write (50 ms here) and cancels;
  // wait for that cancel() (counted at once, though the loop is held) rather
  // than for a fixed time, so a slow machine cannot let the second request run.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (server.engine().get_stats().cancel_requests < 1 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(server.engine().get_stats().cancel_requests >= 1);
  server.executor().resume();
  first.join();
  REQUIRE(running.status == 200);
  const json stats = server.wait_until_idle();
  CHECK(stats["total_tasks"] == 2);
  CHECK(stats["total_tokens"] == running.body_json()["usage"]["completion_tokens"]);  // the second made none
  CHECK(stats["cache"]["blocks_held"] == 0);
}

TEST_CASE("A client that stops reading does not hold up the others", "[stream]") {
  TestServer server;
  std::promise<void> others_done;
  std::shared_future<void> released = others_done.get_future().share();
  auto client = server.client();
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/chat/completions";
  request.body = openai_body("Once upon a time", 60, true).dump();
  request.set_header("Content-Type", "application/json");
  std::string stalled_body;
  request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    stalled_body.append(data, size);
    released.wait();  // stops reading until the other requests are served
    return true;
  };
  std::jthread stalled([&] {
    httplib::Response response;
    httplib::Error error = httplib::Error::Success;
    client->send(request, response, error);
  });
  for (int i = 0; i < 4; ++i) {
    CHECK(post(server, "/v1/messages", anthropic_body("Story " + std::to_string(i), 20)).status == 200);
    CHECK(post(server, "/v1/chat/completions", openai_body("Tale " + std::to_string(i), 20, true)).status == 200);
  }
  others_done.set_value();
  stalled.join();
  CHECK(streamed_text_openai(stalled_body) ==
        post(server, "/v1/chat/completions", openai_body("Once upon a time", 60)).body_json()["choices"][0]["message"]
            ["content"]);
}

TEST_CASE("Shutting the engine down ends open streams with an error event", "[stream]") {
  TestServer server;
  json openai = openai_body("Once upon a time", 200, true);
  json anthropic = anthropic_body("Once upon a time", 200, true);
  openai["ignore_eos"] = anthropic["ignore_eos"] = true;
  Reply openai_reply, anthropic_reply;
  {
    // The loop runs only the steps let through: both requests are submitted,
    // a few steps run one at a time, and the loop is held inside the next
    // while shutdown() begins, so that neither 200-token stream can finish
    // first however slow this thread is.
    server.executor().pause();
    std::jthread a([&] { openai_reply = try_post(server, "/v1/chat/completions", openai); });
    std::jthread b([&] { anthropic_reply = try_post(server, "/v1/messages", anthropic); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (server.engine().get_stats().total_tasks < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(server.engine().get_stats().total_tasks == 2);
    while (server.engine().get_stats().total_tokens < 4) server.executor().step_once();
    REQUIRE(server.engine().get_stats().total_tokens < 400);
    std::jthread stopper([&] { server.engine().shutdown(); });
    while (server.engine().accepting() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server.executor().resume();
  }
  REQUIRE(openai_reply.status == 200);
  const auto openai_events = parse_sse(openai_reply.body);
  REQUIRE(openai_events.size() >= 2);
  CHECK(openai_events.back().data == "[DONE]");
  const json error = json::parse(openai_events[openai_events.size() - 2].data);
  CHECK(error["error"]["code"] == "service_unavailable");

  REQUIRE(anthropic_reply.status == 200);
  const auto anthropic_events = parse_sse(anthropic_reply.body);
  REQUIRE_FALSE(anthropic_events.empty());
  CHECK(anthropic_events.back().event == "error");
  CHECK(json::parse(anthropic_events.back().data)["error"]["type"] == "api_error");

  // After shutdown, requests are refused with 503 in the protocol's shape.
  const Reply refused = post(server, "/v1/chat/completions", openai_body("Hi", 3));
  CHECK(refused.status == 503);
  CHECK(refused.body_json()["error"]["type"] == "server_error");
}

TEST_CASE("32 simultaneous greedy requests each return what they return alone", "[stream][concurrency]") {
  TestServer server;
  constexpr int kClients = 32;
  auto prompt_of = [](int i) { return "Request " + std::to_string(i) + " begins"; };
  auto max_tokens_of = [](int i) { return 8 + (i * 7) % 25; };  // different lengths end at different steps
  std::vector<std::string> alone(kClients);
  for (int i = 0; i < kClients; ++i)
    alone[i] = post(server, "/v1/chat/completions", openai_body(prompt_of(i), max_tokens_of(i)))
                   .body_json()["choices"][0]["message"]["content"];

  // Catch's assertions are not thread-safe: the threads only record.
  std::vector<std::string> together(kClients), failure(kClients);
  std::vector<int> status(kClients, 0);
  std::latch start(kClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      // Both protocols, streamed and whole.
      const bool anthropic = i % 2 == 1, stream = (i / 2) % 2 == 1;
      const json body = anthropic ? anthropic_body(prompt_of(i), max_tokens_of(i), stream)
                                  : openai_body(prompt_of(i), max_tokens_of(i), stream);
      auto client = server.client();
      start.arrive_and_wait();
      const auto r = client->Post(anthropic ? "/v1/messages" : "/v1/chat/completions", body.dump(),
                                  "application/json");
      if (!r) {
        failure[i] = httplib::to_string(r.error());
        return;
      }
      status[i] = r->status;
      if (r->status != 200) return;
      try {
        if (stream)
          together[i] = anthropic ? streamed_text_anthropic(r->body) : streamed_text_openai(r->body);
        else
          together[i] = anthropic ? json::parse(r->body)["content"][0]["text"].get<std::string>()
                                  : json::parse(r->body)["choices"][0]["message"]["content"].get<std::string>();
      } catch (const std::exception& e) {
        failure[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) {
    INFO("request " << i);
    CHECK(failure[i] == "");
    CHECK(status[i] == 200);
    CHECK(together[i] == alone[i]);
  }
  const json stats = server.wait_until_idle();
  CHECK(stats["total_tasks"] == 2 * kClients);
  CHECK(stats["cache"]["blocks_held"] == 0);
}

}  // namespace astrai::test
