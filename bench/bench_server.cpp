// The HTTP server's cost: time to first token (TTFT) and time per output
// token (TPOT) for 1, 8, 32 and 64 concurrent streaming clients, through
// `astrai serve`'s HttpServer on loopback and through the engine called
// directly, in the same iteration with the same prompts. The ratio
// server/engine of the whole round's wall time is the HTTP overhead (1.0 =
// none).
//
// Model: the synthetic model `astrai serve` serves by default (the
// stories260K shape: dim 64, 5 layers, vocab 512, context 512), CPU
// reference, up to 64 requests batched together. Each client sends a
// different 16-word prompt and streams 64 tokens (greedy, ignore_eos).
//
// Counters (means over clients and iterations, milliseconds):
//   server_ttft_ms, server_tpot_ms   through HTTP (OpenAI streaming API)
//   engine_ttft_ms, engine_tpot_ms   GenerateResult::next_piece() in-process
//   overhead                         server round wall time / engine round wall time
//   http_us_per_token                (server round - engine round) / tokens streamed, microseconds
// OpenBLAS runs on one thread unless OPENBLAS_NUM_THREADS is set (see
// bench_engine.cpp for why).
//
// Run: ninja -C build bench/bench_server && ./build/bench/bench_server
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "server/http_server.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::ordered_json;

constexpr int kNewTokens = 64;
constexpr int kMaxClients = 64;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// What one client saw of one request.
struct Timing {
  double ttft_ms = 0;  // request sent -> first text
  double tpot_ms = 0;  // first text -> end, per further token
  bool ok = false;
};

// The served model and the server in front of it, made once.
struct Bench {
  std::shared_ptr<astrai::ServedModel> model;
  std::unique_ptr<astrai::HttpServer> server;
  int port = 0;

  static Bench& get() {
    static Bench bench = [] {
      if (!std::getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
      const astrai::ModelConfig config = astrai::preset_config("stories260K");
      auto weights = std::make_shared<const astrai::ModelWeights>(astrai::make_synthetic_weights(config, 260));
      auto tokenizer = std::make_shared<const astrai::Tokenizer>(astrai::make_synthetic_tokenizer(config.vocab_size));
      astrai::EngineConfig engine_config;
      engine_config.scheduler.max_running_tasks = kMaxClients;
      auto engine = std::make_shared<astrai::InferenceEngine>(weights, tokenizer, engine_config);
      Bench b;
      b.model = astrai::make_served_model(engine, "bench", "plain");
      astrai::ServerOptions options;
      options.port = 0;
      options.threads = 2 * kMaxClients;
      options.log_requests = false;
      b.server = std::make_unique<astrai::HttpServer>(options);
      b.server->set_model(b.model);
      b.port = b.server->start();
      return b;
    }();
    return bench;
  }
};

std::string prompt_of(int client) {
  std::string p = "Story " + std::to_string(client) + ":";
  for (int w = 0; w < 15; ++w) p += " word" + std::to_string((client * 7 + w) % 50);
  return p;
}

Timing through_server(int port, int client) {
  const json body = {{"model", "bench"},
                     {"messages", json::array({{{"role", "user"}, {"content", prompt_of(client)}}})},
                     {"max_tokens", kNewTokens},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"stream", true},
                     // The usage chunk (its token count is read below) comes only when asked.
                     {"stream_options", {{"include_usage", true}}}};
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(120);
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/chat/completions";
  request.body = body.dump();
  request.set_header("Content-Type", "application/json");
  // Events are split at blank lines as they arrive; a content delta marks the first token.
  std::string pending;
  Clock::time_point first{};
  int tokens = 0;
  request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    pending.append(data, size);
    for (size_t end; (end = pending.find("\n\n")) != std::string::npos; pending.erase(0, end + 2)) {
      const std::string event = pending.substr(0, end);
      if (event.rfind("data: {", 0) != 0) continue;
      const json chunk = json::parse(event.substr(6));
      if (first == Clock::time_point{} && !chunk["choices"].empty() &&
          chunk["choices"][0]["delta"].contains("content"))
        first = Clock::now();
      if (chunk.contains("usage") && chunk["usage"].is_object()) tokens = chunk["usage"]["completion_tokens"];
    }
    return true;
  };
  const auto start = Clock::now();
  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  const bool sent = http.send(request, response, error);
  const auto end = Clock::now();
  if (!sent || response.status != 200 || first == Clock::time_point{} || tokens < 2) return {};
  return {ms(first - start), ms(end - first) / (tokens - 1), true};
}

Timing through_engine(astrai::ServedModel& model, int client) {
  astrai::GenerationRequest request;
  request.prompt_ids = model.encode({{astrai::ChatRole::User, prompt_of(client)}});
  request.max_tokens = kNewTokens;
  request.sampling.temperature = 0;
  request.ignore_eos = true;
  const auto start = Clock::now();
  auto result = model.engine->generate_with_request(std::move(request));
  Clock::time_point first{};
  while (auto piece = result->next_piece())
    if (first == Clock::time_point{}) first = Clock::now();
  const auto end = Clock::now();
  const int tokens = int(result->wait().tokens.size());
  if (first == Clock::time_point{} || tokens < 2) return {};
  return {ms(first - start), ms(end - first) / (tokens - 1), true};
}

// Runs `clients` requests at once; returns the round's wall time (ms) and
// adds each client's timings to the sums.
template <class Run>
double round_of(int clients, Run run, double& ttft_sum, double& tpot_sum, int& failures) {
  std::vector<Timing> timings(static_cast<size_t>(clients));
  std::latch start(clients);
  const auto begin = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (int c = 0; c < clients; ++c)
      threads.emplace_back([&, c] {
        start.arrive_and_wait();
        timings[size_t(c)] = run(c);
      });
  }
  const double wall = ms(Clock::now() - begin);
  for (const Timing& t : timings) {
    if (!t.ok) ++failures;
    ttft_sum += t.ttft_ms;
    tpot_sum += t.tpot_ms;
  }
  return wall;
}

void BM_ServerVsEngine(benchmark::State& state) {
  Bench& bench = Bench::get();
  const int clients = int(state.range(0));
  double server_ttft = 0, server_tpot = 0, engine_ttft = 0, engine_tpot = 0, server_wall = 0, engine_wall = 0;
  int failures = 0;
  for (auto _ : state) {
    engine_wall += round_of(clients, [&](int c) { return through_engine(*bench.model, c); }, engine_ttft,
                            engine_tpot, failures);
    const double wall = round_of(clients, [&](int c) { return through_server(bench.port, c); }, server_ttft,
                                 server_tpot, failures);
    server_wall += wall;
    state.SetIterationTime(wall / 1000.0);
  }
  if (failures > 0) state.SkipWithError("some requests failed");
  const double n = double(state.iterations()) * clients;
  state.counters["server_ttft_ms"] = server_ttft / n;
  state.counters["server_tpot_ms"] = server_tpot / n;
  state.counters["engine_ttft_ms"] = engine_ttft / n;
  state.counters["engine_tpot_ms"] = engine_tpot / n;
  state.counters["overhead"] = server_wall / engine_wall;
  state.counters["server_tok_per_s"] =
      benchmark::Counter(double(kNewTokens) * n / (server_wall / 1000.0));
  // The HTTP layer's host cost per streamed token: the server round's extra
  // wall time over the engine round's, spread over every token it carried.
  state.counters["http_us_per_token"] = (server_wall - engine_wall) * 1000.0 / (double(kNewTokens) * n);
}

BENCHMARK(BM_ServerVsEngine)->Arg(1)->Arg(8)->Arg(32)->Arg(64)->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3.0);

// What GET /metrics costs the scheduler thread per generated token: a chat
// request's on_token hook with its RequestMetrics attached (a clock read, an
// inter-token histogram observation, a counter add) against the same hook
// without it. Filter: --benchmark_filter=Metrics
void BM_MetricsTokenHook(benchmark::State& state) {
  const bool recorded = state.range(0) != 0;
  auto metrics = std::make_shared<astrai::ServerMetrics>();
  astrai::GenerationRequest request;
  uint64_t pieces = 0;
  request.on_token = [&pieces](const astrai::TokenEvent& event) { pieces += event.text.size(); };
  if (recorded) metrics->start_request()->attach(request, 16);
  const astrai::TokenEvent event{1, 42, "piece"};
  for (auto _ : state) request.on_token(event);
  benchmark::DoNotOptimize(pieces);
  state.SetLabel(recorded ? "with metrics" : "without");
}

BENCHMARK(BM_MetricsTokenHook)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
