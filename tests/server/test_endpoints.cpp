// GET /health, /v1/models, /stats; unknown paths; the server before its model
// is loaded; what is (and is not) logged.
#include <iostream>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "tests/server/server_fixture.h"

namespace astrai::test {

TEST_CASE("GET /health reports the model as loaded", "[endpoints]") {
  TestServer server;
  const Reply reply = get(server, "/health");
  CHECK(reply.status == 200);
  CHECK(reply.body_json() == json({{"status", "ok"}, {"model_loaded", true}}));
}

TEST_CASE("GET /v1/models lists the served model for both SDKs", "[endpoints]") {
  TestServer server;
  const Reply reply = get(server, "/v1/models");
  REQUIRE(reply.status == 200);
  const json body = reply.body_json();
  CHECK(body["object"] == "list");
  REQUIRE(body["data"].size() == 1);
  const json& m = body["data"][0];
  CHECK(m["id"] == "tiny-test-model");
  CHECK(m["object"] == "model");        // OpenAI
  CHECK(m["owned_by"] == "astrai");
  CHECK(m["created"].is_number_integer());
  CHECK(m["type"] == "model");          // Anthropic
  CHECK(m["display_name"] == "tiny-test-model");
  CHECK(body["has_more"] == false);
}

TEST_CASE("GET /stats counts tasks and tokens and shows the cache", "[endpoints]") {
  TestServer server;
  const json before = server.wait_until_idle();
  for (const char* key : {"total_tasks", "total_tokens", "active_tasks", "waiting_queue"})
    CHECK(before[key].is_number_integer());
  CHECK(before["total_tasks"] == 0);
  const json reply = post(server, "/v1/chat/completions", openai_body("Hi", 5)).body_json();
  const json after = server.wait_until_idle();
  CHECK(after["total_tasks"] == 1);
  CHECK(after["total_tokens"] == reply["usage"]["completion_tokens"]);
  CHECK(after["active_tasks"] == 0);
  CHECK(after["waiting_queue"] == 0);
  CHECK(after["cache"]["blocks_held"] == 0);
  CHECK(after["cache"]["blocks_total"].get<int>() > 0);
}

TEST_CASE("Unknown paths are 404 with a JSON body", "[endpoints][errors]") {
  TestServer server;
  for (const Reply& reply : {get(server, "/v1/nothing"), post(server, "/v1/embeddings", std::string("{}")),
                             get(server, "/v1/chat/completions")}) {
    CHECK(reply.status == 404);
    CHECK(reply.body_json() == json({{"detail", "Not Found"}}));
  }
}

TEST_CASE("Until the model is loaded: /health says so and the rest is 503", "[endpoints][errors]") {
  TestServerOptions options;
  options.load_model = false;
  TestServer server(options);
  CHECK(get(server, "/health").body_json() == json({{"status", "ok"}, {"model_loaded", false}}));
  const json not_ready = {{"detail", "Engine not initialized"}};
  for (const Reply& reply : {post(server, "/v1/chat/completions", openai_body("Hi", 3)),
                             post(server, "/v1/messages", anthropic_body("Hi", 3)), get(server, "/stats"),
                             get(server, "/v1/models")}) {
    CHECK(reply.status == 503);
    CHECK(reply.body_json() == not_ready);
  }
  server.load();
  CHECK(get(server, "/health").body_json()["model_loaded"] == true);
  CHECK(post(server, "/v1/chat/completions", openai_body("Hi", 3)).status == 200);
  CHECK(post(server, "/v1/messages", anthropic_body("Hi", 3)).status == 200);
}

TEST_CASE("/stats says where the model runs and the bytes its weights and KV cache take", "[endpoints]") {
  for (const KVCacheKind kind : {KVCacheKind::Contiguous, KVCacheKind::Paged}) {
    TestServerOptions options;
    options.cache = kind;
    TestServer server(options);
    const json stats = get(server, "/stats").body_json();
    const ModelConfig c = tiny_config(options.context);
    // float32 parameters, counted from the shape: embedding and classifier,
    // the final norm, and per layer two norms and the seven matrices.
    const size_t D = size_t(c.dim), H = size_t(c.hidden_dim), V = size_t(c.vocab_size), Q = size_t(c.q_dim()),
                 KV = size_t(c.kv_dim());
    const size_t params = 2 * V * D + D + size_t(c.n_layers) * (2 * D + Q * D + 2 * KV * D + D * Q + 3 * H * D);
    CHECK(stats["memory"]["backend"] == "gated-cpu-reference");
    CHECK(stats["memory"]["weights_bytes"].get<size_t>() == 4 * params);
    // K and V, float32, for every token the cache's blocks hold, in every layer.
    const size_t tokens = stats["cache"]["blocks_total"].get<size_t>() * stats["cache"]["block_tokens"].get<size_t>();
    CHECK(stats["memory"]["kv_cache_bytes"].get<size_t>() == 2 * 4 * tokens * size_t(c.n_layers) * KV);
    // No sliding layers: everything is the full layers'.
    CHECK(stats["memory"]["kv_cache_full_layers_bytes"] == stats["memory"]["kv_cache_bytes"]);
    CHECK(stats["memory"]["kv_cache_sliding_layers_bytes"].get<size_t>() == 0);
    CHECK(stats["cache"]["sliding_blocks_total"].get<int>() == 0);
  }
}

TEST_CASE("The request log names method, path and status, never content", "[endpoints]") {
  TestServerOptions options;
  options.log_requests = true;
  TestServer server(options);
  std::ostringstream captured;
  std::streambuf* original = std::cerr.rdbuf(captured.rdbuf());
  const std::string secret = "secret-words-in-the-prompt";
  post(server, "/v1/chat/completions", openai_body(secret, 3));
  post(server, "/v1/messages", anthropic_body(secret, 3, true));
  post(server, "/v1/messages", json{{"messages", secret}});  // a 422 that quotes nothing back into the log
  // The logger runs after each response is written, in any order: give it a moment.
  const std::vector<std::string> expected_lines = {"POST /v1/chat/completions 200", "POST /v1/messages 200",
                                                   "POST /v1/messages 422"};
  auto all_logged = [&] {
    const std::string log = captured.str();
    for (const auto& line : expected_lines)
      if (log.find(line) == std::string::npos) return false;
    return true;
  };
  // Polled until logged (a hang detector's bound, not a speed claim).
  for (int i = 0; i < 24000 && !all_logged(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::cerr.rdbuf(original);
  const std::string log = captured.str();
  INFO(log);
  for (const auto& line : expected_lines) CHECK(log.find(line) != std::string::npos);
  CHECK(log.find(secret) == std::string::npos);
}

}  // namespace astrai::test
