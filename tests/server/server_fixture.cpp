#include "tests/server/server_fixture.h"

#include "engine/chat/jinja_chat_template.h"
#include "engine/executor/reference_executor.h"
#include "engine/kv_cache/page_cache.h"

#include <thread>

#include <catch2/catch.hpp>

#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"

namespace astrai::test {

GatedExecutor::GatedExecutor(std::shared_ptr<const ModelWeights> weights, std::chrono::microseconds step_delay)
    : inner_(std::move(weights)), step_delay_(step_delay) {}

xt::xtensor<float, 2> GatedExecutor::forward(std::span<const BatchToken> batch, KVCacheView& cache) {
  {
    std::unique_lock lock(mutex_);
    ++blocked_;
    ++arrivals_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return !paused_ || passes_ > 0; });
    if (paused_) --passes_;
    --blocked_;
  }
  if (step_delay_.count() > 0) std::this_thread::sleep_for(step_delay_);
  xt::xtensor<float, 2> logits = inner_.forward(batch, cache);
  std::vector<int> script;
  int prompt = 0, end = -1;
  {
    std::lock_guard lock(mutex_);
    script = script_;
    prompt = script_prompt_;
    end = script_end_;
  }
  if (script.empty()) return logits;
  size_t row = 0;
  for (const BatchToken& t : batch) {
    if (!t.want_logits) continue;
    const int next = t.pos + 1 - prompt;  // the generated token this row predicts
    const int token = next >= 0 && size_t(next) < script.size() ? script[size_t(next)] : size_t(next) == script.size() ? end : -1;
    if (token >= 0) logits(row, size_t(token)) += 1e4f;
    ++row;
  }
  return logits;
}

void GatedExecutor::script(std::vector<int> tokens, int prompt_tokens, int end) {
  std::lock_guard lock(mutex_);
  script_ = std::move(tokens);
  script_prompt_ = prompt_tokens;
  script_end_ = end;
}

void GatedExecutor::pause() {
  std::lock_guard lock(mutex_);
  paused_ = true;
}

void GatedExecutor::resume() {
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
    passes_ = 0;
  }
  changed_.notify_all();
}

void GatedExecutor::wait_until_blocked() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return paused_ && blocked_ > 0; });
}

void GatedExecutor::allow(int steps) {
  {
    std::lock_guard lock(mutex_);
    passes_ += steps;
  }
  changed_.notify_all();
}

void GatedExecutor::step_once() {
  std::unique_lock lock(mutex_);
  REQUIRE(paused_);
  REQUIRE(changed_.wait_for(lock, std::chrono::seconds(120), [&] { return blocked_ > passes_; }));
  const uint64_t next = arrivals_ + 1;
  ++passes_;
  changed_.notify_all();
  REQUIRE(changed_.wait_for(lock, std::chrono::seconds(120), [&] { return arrivals_ >= next; }));
}

ModelConfig tiny_config(int context) {
  ModelConfig c{.dim = 32, .hidden_dim = 64, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .vocab_size = 512,
                .max_seq_len = context};
  return c;
}

TestServer::TestServer(TestServerOptions options) : options_(std::move(options)) {
  const ModelConfig config = tiny_config(options_.context);
  auto weights = std::make_shared<const ModelWeights>(make_synthetic_weights(config, 7));
  auto tokenizer = std::make_shared<const Tokenizer>(make_synthetic_tokenizer(config.vocab_size));
  auto executor = std::make_unique<GatedExecutor>(weights, options_.step_delay);
  executor_ = executor.get();
  EngineConfig engine_config;
  engine_config.scheduler.max_running_tasks = options_.max_running;
  engine_config.scheduler.max_waiting_tasks = options_.max_waiting;
  engine_config.scheduler.speculation = options_.speculation;
  if (options_.draft_of_itself > 0) {  // as `astrai serve --draft-model` makes it on the reference (cli/backend.cpp)
    const int pages = options_.max_running * ((config.max_seq_len + 15) / 16);
    engine_config.scheduler.speculation = draft_model_speculation(
        std::make_shared<DraftModelProposer>(std::make_unique<ReferenceExecutor>(weights),
                                             std::make_unique<PageCache>(config, pages, 16), options_.max_running),
        options_.draft_of_itself);
  }
  engine_config.cache = options_.cache;
  auto engine = std::make_shared<InferenceEngine>(std::move(executor), tokenizer, engine_config);
  model_ = options_.jinja_template.empty()
               ? make_served_model(engine, "tiny-test-model", options_.chat_template)
               : make_served_model(engine, "tiny-test-model",
                                   std::make_unique<JinjaChatTemplate>(template_config_for(options_.jinja_template, *tokenizer)));
  model_->default_sampling = options_.default_sampling;
  model_->default_max_tokens = options_.default_max_tokens;

  ServerOptions server_options;
  server_options.host = "127.0.0.1";
  server_options.port = 0;
  server_options.api_key = options_.api_key;
  server_options.max_body_bytes = options_.max_body_bytes;
  server_options.threads = options_.threads;
  server_options.log_requests = options_.log_requests;
  server_options.stream_heartbeat = std::chrono::milliseconds(50);
  server_options.request_timeout = options_.request_timeout;
  server_options.read_timeout = options_.read_timeout;
  server_options.keep_alive_timeout = options_.keep_alive_timeout;
  server_options.responses_store_bytes = options_.responses_store_bytes;
  server_ = std::make_unique<HttpServer>(server_options);
  if (options_.load_model) server_->set_model(model_);
  port_ = server_->start();
}

TestServer::~TestServer() {
  executor_->resume();
  model_->engine->shutdown();
  server_->stop();
}

void TestServer::load() { server_->set_model(model_); }

std::unique_ptr<httplib::Client> TestServer::client() const {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
  c->set_connection_timeout(10);
  c->set_read_timeout(30);
  c->set_write_timeout(10);
  return c;
}

json TestServer::wait_until_idle(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const Reply r = get(*this, "/stats", {{"Authorization", "Bearer " + options_.api_key}});
    REQUIRE(r.status == 200);
    const json stats = r.body_json();
    if (stats["active_tasks"] == 0 && stats["waiting_queue"] == 0) return stats;
    if (std::chrono::steady_clock::now() > deadline) FAIL("the engine did not become idle: " << r.body);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

json Reply::body_json() const {
  try {
    return json::parse(body);
  } catch (const std::exception& e) {
    FAIL("response body is not JSON (" << e.what() << "): " << body);
  }
  return {};
}

std::string Reply::header(const std::string& name) const {
  const auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

namespace {
Reply reply_of(httplib::Result result) {
  if (!result) FAIL("HTTP request failed: " << httplib::to_string(result.error()));
  return Reply{result->status, "", result->body, result->headers};
}
}  // namespace

Reply try_post(const TestServer& server, const std::string& path, const json& body) {
  auto result = server.client()->Post(path.c_str(), body.dump(), "application/json");
  if (!result) {
    Reply failed;
    failed.error = httplib::to_string(result.error());
    return failed;
  }
  return Reply{result->status, "", result->body, result->headers};
}

Reply get(const TestServer& server, const std::string& path, const httplib::Headers& headers) {
  return reply_of(server.client()->Get(path.c_str(), headers));
}

Reply del(const TestServer& server, const std::string& path) { return reply_of(server.client()->Delete(path.c_str())); }

Reply post(const TestServer& server, const std::string& path, const std::string& body,
           const httplib::Headers& headers) {
  return reply_of(server.client()->Post(path.c_str(), headers, body, "application/json"));
}

void TestServer::wait_for_cancel_requests(uint64_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (engine().get_stats().cancel_requests < count && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(engine().get_stats().cancel_requests >= count);
}

std::string read_then_disconnect(const TestServer& server, const std::string& path, const json& body, int chunks) {
  auto client = server.client();
  httplib::Request request;
  request.method = "POST";
  request.path = path;
  request.body = body.dump();
  request.set_header("Content-Type", "application/json");
  std::string received;
  int seen = 0;
  request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    received.append(data, size);
    return ++seen < chunks;
  };
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  client->send(request, response, error);
  CHECK(error == httplib::Error::Canceled);
  return received;
}

Reply post(const TestServer& server, const std::string& path, const json& body, const httplib::Headers& headers) {
  return post(server, path, body.dump(), headers);
}

std::vector<SseEvent> parse_sse(const std::string& stream) {
  std::vector<SseEvent> events;
  SseEvent current;
  bool has_data = false;
  size_t start = 0;
  while (start < stream.size()) {
    size_t end = stream.find('\n', start);
    if (end == std::string::npos) end = stream.size();
    std::string line = stream.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (has_data || !current.event.empty()) events.push_back(current);
      current = {};
      has_data = false;
      continue;
    }
    if (line[0] == ':') continue;
    const size_t colon = line.find(':');
    const std::string field = line.substr(0, colon);
    std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    if (field == "event") {
      current.event = value;
    } else if (field == "data") {
      current.data += (has_data ? "\n" : "") + value;
      has_data = true;
    }
  }
  return events;
}

TaskOutput engine_alone(InferenceEngine& engine, const std::string& prompt, int max_tokens,
                        std::vector<std::string> stop) {
  GenerationRequest request;
  request.prompt = prompt;
  request.max_tokens = max_tokens;
  request.sampling.temperature = 0;
  request.stop = std::move(stop);
  return engine.generate_with_request(std::move(request))->wait();
}

json openai_body(const std::string& content, int max_tokens, bool stream) {
  return {{"model", "tiny-test-model"},
          {"messages", json::array({{{"role", "user"}, {"content", content}}})},
          {"max_tokens", max_tokens},
          {"temperature", 0},
          {"stream", stream}};
}

json anthropic_body(const std::string& content, int max_tokens, bool stream) {
  return {{"model", "tiny-test-model"},
          {"messages", json::array({{{"role", "user"}, {"content", content}}})},
          {"max_tokens", max_tokens},
          {"temperature", 0},
          {"stream", stream}};
}

}  // namespace astrai::test
