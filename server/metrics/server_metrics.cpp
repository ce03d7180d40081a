#include "server/metrics/server_metrics.h"

#include <algorithm>

namespace astrai {

namespace {

// The routes counted under their own label; every other path is "other".
constexpr std::array<std::string_view, 10> kRoutes = {
    "/v1/chat/completions", "/v1/messages", "/v1/completions", "/v1/models", "/health", "/stats", "/metrics",
    "/debug/kv_blocks", "/reset_prefix_cache", "other"};

size_t route_index(std::string_view path) {
  for (size_t i = 0; i + 1 < kRoutes.size(); ++i)
    if (path == kRoutes[i]) return i;
  return kRoutes.size() - 1;
}

// vLLM's finished_reason label: "stop" (EOS or a stop string), "length"
// (max_tokens or the context), "abort" (cancelled), "error".
constexpr std::array<std::string_view, 4> kReasonNames = {"stop", "length", "abort", "error"};

size_t reason_index(FinishReason reason) {
  switch (reason) {
    case FinishReason::Eos:
    case FinishReason::StopSequence:
    case FinishReason::ConstraintComplete: return 0;
    case FinishReason::Length:
    case FinishReason::ContextLimit: return 1;
    case FinishReason::Cancelled: return 2;
    case FinishReason::Error: break;
  }
  return 3;
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

// vLLM's buckets (vllm/v1/metrics/loggers.py): time_to_first_token_seconds,
// inter_token_latency_seconds (formerly time_per_output_token_seconds),
// e2e_request_latency_seconds.
const std::vector<double>& ServerMetrics::ttft_buckets() {
  static const std::vector<double> b = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                        1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  return b;
}

const std::vector<double>& ServerMetrics::inter_token_buckets() {
  static const std::vector<double> b = {0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,  0.3,  0.4, 0.5,
                                        0.75, 1.0,   2.5,  5.0,   7.5,  10.0, 20.0, 40.0, 80.0};
  return b;
}

const std::vector<double>& ServerMetrics::e2e_buckets() {
  static const std::vector<double> b = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,    10.0,   15.0,  20.0,
                                        30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  return b;
}

ServerMetrics::ServerMetrics()
    : responses_(new std::array<Counter, kStatuses>[kRoutes.size()]),
      ttft_(ttft_buckets()),
      inter_token_(inter_token_buckets()),
      e2e_(e2e_buckets()) {}

void ServerMetrics::count_response(std::string_view path, int status) {
  const size_t slot = status >= kMinStatus && status <= kMaxStatus ? size_t(status - kMinStatus) : kStatuses - 1;
  responses_[route_index(path)][slot].add();
}

RequestMetrics::RequestMetrics(std::shared_ptr<ServerMetrics> metrics)
    : metrics_(std::move(metrics)), start_(Clock::now()) {}

void RequestMetrics::attach(GenerationRequest& request, int prompt_tokens) {
  prompt_tokens_ = prompt_tokens;
  last_token_.assign(size_t(std::max(request.n, 1)), std::nullopt);
  unfinished_ = std::max(request.n, 1);
  // Counted first: a hook that throws ends the request, but its token was made.
  request.on_token = [self = shared_from_this(), inner = std::move(request.on_token)](const TokenEvent& event) {
    if (event.token >= 0) self->on_token(event.index);  // -1: the held-back text at the end, not a token
    if (inner) inner(event);
  };
  request.on_finish = [self = shared_from_this(), inner = std::move(request.on_finish)](const TaskOutput& output) {
    self->on_finish(output);
    if (inner) inner(output);
  };
}

void RequestMetrics::on_token(int index) {
  const auto now = Clock::now();
  ServerMetrics& m = *metrics_;
  if (!first_token_seen_) {  // the choices share one prefill: one first token
    first_token_seen_ = true;
    m.ttft_.observe(seconds(now - start_));
    m.prompt_tokens_.add(uint64_t(prompt_tokens_));
  }
  std::optional<Clock::time_point>& last = last_token_.at(size_t(index));
  if (last) m.inter_token_.observe(seconds(now - *last));
  last = now;
  m.generation_tokens_.add();
}

void RequestMetrics::on_finish(const TaskOutput& output) {
  if (--unfinished_ == 0) metrics_->e2e_.observe(seconds(Clock::now() - start_));
  metrics_->finished_[reason_index(output.reason)].add();
}

std::string ServerMetrics::render(const SchedulerStats* engine, const ConnectionManager::Counts& http,
                                  const Served* served) const {
  PrometheusText out;
  out.family("astrai_http_requests_total", "HTTP responses by route and status code, counted before they are sent.",
             "counter");
  for (size_t r = 0; r < kRoutes.size(); ++r) {
    for (size_t s = 0; s < kStatuses; ++s) {
      const uint64_t n = responses_[r][s].value();
      if (n == 0) continue;  // a label set appears once it has been seen
      const std::string status = s + 1 < kStatuses ? std::to_string(kMinStatus + int(s)) : "other";
      out.sample("astrai_http_requests_total", {{"route", std::string(kRoutes[r])}, {"status", status}}, n);
    }
  }
  out.family("astrai_request_success_total", "Chat requests the engine finished, by finished_reason.", "counter");
  for (size_t i = 0; i < kReasons; ++i)
    out.sample("astrai_request_success_total", {{"finished_reason", std::string(kReasonNames[i])}},
               finished_[i].value());
  out.family("astrai_prompt_tokens_total", "Prompt tokens of chat requests, counted when their prefill is done.",
             "counter");
  out.sample("astrai_prompt_tokens_total", {}, prompt_tokens_.value());
  out.family("astrai_generation_tokens_total", "Tokens generated for chat requests.", "counter");
  out.sample("astrai_generation_tokens_total", {}, generation_tokens_.value());
  out.histogram("astrai_time_to_first_token_seconds",
                "Time from a chat request's body being read to its first generated token.", ttft_.snapshot());
  out.histogram("astrai_inter_token_latency_seconds", "Time between successive generated tokens of a chat request.",
                inter_token_.snapshot());
  out.histogram("astrai_e2e_request_latency_seconds",
                "Time from a chat request's body being read to the engine finishing it.", e2e_.snapshot());

  out.family("astrai_http_connections_open", "Client connections open now.", "gauge");
  out.sample("astrai_http_connections_open", {}, http.open);
  out.family("astrai_http_heads_timed_out_total", "Request heads answered 408 before reaching a route.", "counter");
  out.sample("astrai_http_heads_timed_out_total", {}, http.timed_out);
  out.family("astrai_http_heads_refused_total", "Request heads refused with 400, 413, 414 or 431 before reaching a route.",
             "counter");
  out.sample("astrai_http_heads_refused_total", {}, http.refused);

  if (!engine) return out.text();
  const SchedulerStats& s = *engine;
  out.family("astrai_num_requests_running", "Requests decoding or prefilling now.", "gauge");
  out.sample("astrai_num_requests_running", {}, uint64_t(s.active_tasks));
  out.family("astrai_num_requests_waiting", "Requests queued (or preempted) for the engine now.", "gauge");
  out.sample("astrai_num_requests_waiting", {}, uint64_t(s.waiting_queue));
  out.family("astrai_kv_cache_usage_perc", "KV cache blocks held by requests, as a fraction (1 = all).", "gauge");
  out.sample("astrai_kv_cache_usage_perc", {},
             s.cache.blocks_total > 0 ? double(s.cache.blocks_held) / double(s.cache.blocks_total) : 0.0);
  out.family("astrai_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache (first admissions).",
             "counter");
  out.sample("astrai_prefix_cache_queries_total", {}, s.prefix_query_tokens);
  out.family("astrai_prefix_cache_hits_total", "Prompt tokens found in the prefix cache (their prefill skipped).",
             "counter");
  out.sample("astrai_prefix_cache_hits_total", {}, s.prefix_hit_tokens);
  out.family("astrai_num_preemptions_total", "Requests preempted to make KV cache room.", "counter");
  out.sample("astrai_num_preemptions_total", {}, s.preemptions);
  // Speculative decoding, as vLLM's spec_decode counters
  // (docs/speculative-decoding.md); 0 with speculation off.
  out.family("astrai_spec_decode_num_drafts_total", "Decode steps of a request that carried proposed tokens.",
             "counter");
  out.sample("astrai_spec_decode_num_drafts_total", {}, s.spec_drafts);
  out.family("astrai_spec_decode_num_draft_tokens_total", "Proposed tokens scored by the model.", "counter");
  out.sample("astrai_spec_decode_num_draft_tokens_total", {}, s.spec_draft_tokens);
  out.family("astrai_spec_decode_num_accepted_tokens_total", "Proposed tokens kept (the sampler drew them).",
             "counter");
  out.sample("astrai_spec_decode_num_accepted_tokens_total", {}, s.spec_accepted_tokens);
  out.family("astrai_spec_decode_num_accepted_tokens_per_pos_total",
             "Proposed tokens kept, by their position in the draft (0 first).", "counter");
  for (size_t i = 0; i < s.spec_accepted_per_position.size(); ++i)
    out.sample("astrai_spec_decode_num_accepted_tokens_per_pos_total", {{"position", std::to_string(i)}},
               s.spec_accepted_per_position[i]);
  // vLLM's info gauges, which the Gateway API Inference Extension's endpoint
  // picker reads (docs/deployment.md): the cache's block size and block count
  // (the prefix scorer's), and the LoRA adapters (none: AstrAI serves none).
  out.family("astrai_cache_config_info", "KV cache configuration: block size in tokens and number of blocks.",
             "gauge");
  out.sample("astrai_cache_config_info",
             {{"block_size", std::to_string(s.cache.block_tokens)},
              {"num_gpu_blocks", std::to_string(s.cache.blocks_total)}},
             uint64_t(1));
  if (served) {
    out.family("astrai_lora_requests_info", "LoRA adapters running and waiting (none), as vLLM's; the value is "
               "when they last changed (Unix time).", "gauge");
    out.sample("astrai_lora_requests_info",
               {{"max_lora", "0"}, {"running_lora_adapters", ""}, {"waiting_lora_adapters", ""}},
               double(served->loaded_at));
  }
  if (served && served->kv_events) render_kv_events(out, *served->kv_events);
  return out.text();
}

void ServerMetrics::render_kv_events(PrometheusText& out, const KVEventsPublisher::Counts& k) {
  out.family("astrai_kv_events_batches_total", "KV cache event batches the scheduler handed to the publisher.",
             "counter");
  out.sample("astrai_kv_events_batches_total", {}, k.batches);
  out.family("astrai_kv_events_published_total",
             "KV event messages ZeroMQ accepted, resyncs included (the next sequence number).", "counter");
  out.sample("astrai_kv_events_published_total", {}, k.published);
  out.family("astrai_kv_events_dropped_total",
             "KV event batches lost: the publisher's queue was full, or a subscriber was at its high-water mark.",
             "counter");
  out.sample("astrai_kv_events_dropped_total", {{"reason", "queue_full"}}, k.dropped_queue_full);
  out.sample("astrai_kv_events_dropped_total", {{"reason", "subscriber_full"}}, k.dropped_subscriber_full);
  out.family("astrai_kv_events_resyncs_total", "AllBlocksCleared batches sent after a loss.", "counter");
  out.sample("astrai_kv_events_resyncs_total", {}, k.resyncs);
  out.family("astrai_kv_events_queued", "KV event batches waiting for the publisher's thread now.", "gauge");
  out.sample("astrai_kv_events_queued", {}, k.queued);
}

}  // namespace astrai
