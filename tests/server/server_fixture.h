// An in-process server for the tests: a tiny synthetic model behind a real
// HttpServer on a free loopback port, spoken to over real HTTP with
// httplib::Client. The executor can be paused and slowed, so tests that need
// a request to be running, queued or mid-stream at a given moment arrange it
// instead of racing for it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "engine/executor/reference_executor.h"
#include "engine/inference_engine.h"
#include "engine/speculative/speculation_config.h"
#include "reference/sampling/sampling_params.h"
#include "server/http_server.h"

namespace astrai::test {

// The routes the tests post to.
inline constexpr const char* kChatPath = "/v1/chat/completions";
inline constexpr const char* kCompletionsPath = "/v1/completions";
inline constexpr const char* kMessagesPath = "/v1/messages";

using json = nlohmann::ordered_json;

// The reference executor with a gate: while paused, forward() waits.
class GatedExecutor final : public Executor {
 public:
  GatedExecutor(std::shared_ptr<const ModelWeights> weights, std::chrono::microseconds step_delay);
  const ModelConfig& config() const override { return inner_.config(); }
  xt::xtensor<float, 2> forward(std::span<const BatchToken> batch, KVCacheView& cache) override;
  std::string name() const override { return "gated-cpu-reference"; }
  size_t weights_bytes() const override { return inner_.weights_bytes(); }

  void pause();
  void resume();
  // Blocks until a forward() call is waiting at the closed gate.
  void wait_until_blocked();
  // While paused: lets the next `steps` forward() calls through the closed
  // gate, and no more: a test that pauses, then allows a few steps, knows
  // the loop is held after them however slow its own thread is.
  void allow(int steps);
  // While paused: lets the forward() call waiting at the gate (waits for one)
  // through, then blocks until the next one is waiting there, by which time
  // the loop has published that step's figures. One step, whatever the
  // machine's speed; FAILs after a hang detector's 120 s.
  void step_once();

  // Makes the model write `tokens` (then `end`, e.g. EOS) after any prompt of
  // `prompt_tokens` tokens: each wanted row's logit of the scripted next
  // token is raised by 1e4, far above the synthetic model's spread (a few
  // units), so greedy decoding picks it. Rows of other prompt lengths are
  // left alone. An empty script turns it off.
  void script(std::vector<int> tokens, int prompt_tokens, int end);

 private:
  ReferenceExecutor inner_;
  std::vector<int> script_;
  int script_prompt_ = 0;
  int script_end_ = -1;
  std::chrono::microseconds step_delay_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool paused_ = false;
  int blocked_ = 0;
  int passes_ = 0;          // forward() calls allow() and step_once() let through the closed gate
  uint64_t arrivals_ = 0;   // forward() calls that have reached the gate
};

struct TestServerOptions {
  int context = 256;
  int max_running = 16;
  int max_waiting = 1024;
  KVCacheKind cache = KVCacheKind::Contiguous;
  std::chrono::microseconds step_delay{0};  // added to every forward step
  std::string api_key;
  size_t max_body_bytes = 4 * 1024 * 1024;
  bool load_model = true;                   // false: the server starts without one (503 until set_model)
  bool log_requests = false;
  std::string chat_template = "plain";
  std::chrono::seconds request_timeout{30};  // a request body must arrive within this
  // The connection timeouts (ServerOptions' defaults). A test that checks that
  // something happened "without waiting for a timeout" makes the timeout
  // long (60 s) and waits less, rather than bounding how long it took.
  std::chrono::seconds read_timeout{10};
  std::chrono::seconds keep_alive_timeout{5};
  int threads = 48;                          // httplib workers
  SamplingParams default_sampling{};         // what a request leaves out (a model's generation_config.json)
  std::optional<int> default_max_tokens;     // generation_config.json's max_new_tokens
  std::string jinja_template;                // not "": the model's own chat template (Jinja), replacing chat_template
  size_t responses_store_bytes = size_t(64) << 20;  // the Responses API's stored responses (0: none)
  SpeculationConfig speculation{};           // off unless a proposer is set (--speculative)
  int draft_of_itself = 0;                   // > 0: the model is its own draft model, this many guesses per step
};

// The tiny Llama-shaped model every server test uses (synthetic weights and
// vocabulary, fixed seed).
ModelConfig tiny_config(int context);

class TestServer {
 public:
  explicit TestServer(TestServerOptions options = {});
  ~TestServer();

  int port() const { return port_; }
  HttpServer& server() { return *server_; }
  GatedExecutor& executor() { return *executor_; }
  InferenceEngine& engine() { return *model_->engine; }
  std::shared_ptr<ServedModel> model() const { return model_; }
  // Serves the model (for servers started with load_model = false).
  void load();

  // A client for this server, with timeouts generous enough for CI.
  std::unique_ptr<httplib::Client> client() const;

  // Polls /stats until no task is running or waiting; returns that /stats body.
  // The timeout detects a hang; it is no speed claim.
  json wait_until_idle(std::chrono::milliseconds timeout = std::chrono::milliseconds(120000)) const;
  // Polls until the engine has counted `count` cancel() calls since start
  // (counted at once, even while the executor is paused); FAILs after a hang
  // detector's 120 s.
  void wait_for_cancel_requests(uint64_t count);

 private:
  TestServerOptions options_;
  GatedExecutor* executor_ = nullptr;  // owned by the engine
  std::shared_ptr<ServedModel> model_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

struct Reply {
  int status = 0;
  std::string error;  // transport failure (try_post only)
  std::string body;
  httplib::Headers headers;
  json body_json() const;  // fails the test when the body is not JSON
  std::string header(const std::string& name) const;
};

// For threads (Catch's assertions are not thread-safe): the reply, or the
// transport error's name in Reply::error with status 0.
Reply try_post(const TestServer& server, const std::string& path, const json& body);

Reply get(const TestServer& server, const std::string& path, const httplib::Headers& headers = {});
Reply del(const TestServer& server, const std::string& path);
Reply post(const TestServer& server, const std::string& path, const std::string& body,
           const httplib::Headers& headers = {});
Reply post(const TestServer& server, const std::string& path, const json& body, const httplib::Headers& headers = {});

// Sends a streaming request and closes the connection after `chunks` chunks
// of the body (httplib closes the socket when a content receiver returns
// false); checks that the transfer ended so. Returns the bytes read.
std::string read_then_disconnect(const TestServer& server, const std::string& path, const json& body, int chunks);

// One server-sent event, parsed as the SSE specification says: "field: value"
// lines (one space after the colon dropped), comment lines (":") ignored, a
// blank line ends the event, several data lines are joined by "\n".
struct SseEvent {
  std::string event;  // "" when the event named none
  std::string data;
};
std::vector<SseEvent> parse_sse(const std::string& stream);

// The oracle for the text the server carries: the engine called directly,
// greedy, on the prompt the chat template made.
TaskOutput engine_alone(InferenceEngine& engine, const std::string& prompt, int max_tokens,
                        std::vector<std::string> stop = {});

// Simple chat bodies: one user message.
json openai_body(const std::string& content, int max_tokens, bool stream = false);
json anthropic_body(const std::string& content, int max_tokens, bool stream = false);

}  // namespace astrai::test
