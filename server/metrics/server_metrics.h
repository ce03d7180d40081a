// What `GET /metrics` exposes: the server's own counters and latency
// histograms, kept as requests go, plus the engine's figures read at scrape
// time (SchedulerStats). Names follow vLLM's with the astrai_ prefix
// (docs/server.md has the table).
//
// Hot path: a chat request's hooks (on the scheduler thread) read the clock
// and do relaxed atomic adds, one histogram and one counter per token; no
// lock is taken. Every count is made before the client can see its effect
// (a response is counted before it is written; a request's tokens before its
// result completes), so a scrape after a response always includes it.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generation_request.h"
#include "engine/scheduler/inference_scheduler.h"
#include "server/http/connection_manager.h"
#include "engine/kv_cache/events/kv_events_publisher.h"
#include "server/metrics/prometheus.h"

namespace astrai {

class ServerMetrics;

// One chat request's timing, from the moment the server has its body.
// attach() wraps the request's hooks; both run on the scheduler thread, one
// at a time, so the fields need no lock.
class RequestMetrics : public std::enable_shared_from_this<RequestMetrics> {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RequestMetrics(std::shared_ptr<ServerMetrics> metrics);

  // Counts this request's tokens and times them, calling the hooks the
  // request already has afterwards. `prompt_tokens` is counted at the first
  // generated token (when its prefill is done), as vLLM does. A request
  // for n choices (request.n) is one request: its prompt, first token and
  // end-to-end latency count once (at its first token, and when its last
  // choice ends); each choice's tokens, inter-token gaps (within the choice)
  // and finish reason count as that choice's.
  void attach(GenerationRequest& request, int prompt_tokens);

 private:
  void on_token(int index);
  void on_finish(const TaskOutput& output);

  std::shared_ptr<ServerMetrics> metrics_;
  const Clock::time_point start_;
  std::vector<std::optional<Clock::time_point>> last_token_;  // per choice; none before its first token
  int prompt_tokens_ = 0;
  bool first_token_seen_ = false;
  int unfinished_ = 1;  // choices still running
};

// Owned by a shared_ptr (start_request() hands each request one, so that a
// request's hooks may outlive the server).
class ServerMetrics : public std::enable_shared_from_this<ServerMetrics> {
 public:
  ServerMetrics();

  // One HTTP response with its final status, counted under its route (a path
  // the server does not serve counts as "other", so that clients cannot make
  // new label values).
  void count_response(std::string_view path, int status);

  // A chat request whose body has just been read.
  std::shared_ptr<RequestMetrics> start_request() { return std::make_shared<RequestMetrics>(shared_from_this()); }

  // What the served model adds beside the engine's statistics.
  struct Served {
    int64_t loaded_at = 0;  // Unix time: the LoRA info gauge's value (its adapters never change)
    std::optional<KVEventsPublisher::Counts> kv_events;  // none: KV cache events are off
  };
  // The exposition text. `engine` (and `served`) are null before the model
  // has loaded (their gauges and counters are then left out).
  std::string render(const SchedulerStats* engine, const ConnectionManager::Counts& http,
                     const Served* served = nullptr) const;

  // Bucket bounds, in seconds: vLLM's for the metric of the same name.
  static const std::vector<double>& ttft_buckets();
  static const std::vector<double>& inter_token_buckets();
  static const std::vector<double>& e2e_buckets();

 private:
  friend class RequestMetrics;
  static void render_kv_events(PrometheusText& out, const KVEventsPublisher::Counts& counts);

  static constexpr int kMinStatus = 100, kMaxStatus = 599;
  static constexpr size_t kStatuses = kMaxStatus - kMinStatus + 2;  // the last: anything outside
  static constexpr size_t kReasons = 4;  // vLLM's finished_reason: stop, length, abort, error

  // Indexed [route][status slot]; routes as in server_metrics.cpp's list.
  std::unique_ptr<std::array<Counter, kStatuses>[]> responses_;
  Counter prompt_tokens_, generation_tokens_;
  std::array<Counter, kReasons> finished_;  // by finished_reason
  Histogram ttft_, inter_token_, e2e_;
};

}  // namespace astrai
