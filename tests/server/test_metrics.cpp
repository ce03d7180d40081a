// GET /metrics: the Prometheus primitives (server/prometheus.h) and what the
// server counts (server/server_metrics.h). The exposition text is read back
// by a parser written here from the format's description, not from the
// writer; the counts are compared with what the responses themselves say
// (usage fields, finish reasons) and with the engine's own statistics.
// tests/reliability/test_metrics.py does the same against a real `astrai
// serve`, and parses with the Prometheus Python client where it is installed.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "server/metrics/prometheus.h"
#include "server/metrics/server_metrics.h"
#include "tests/server/server_fixture.h"

namespace astrai::test {

namespace {

// --- an exposition parser (text format 0.0.4), strict about what we write ---

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Family {
  std::string help, type;
  std::vector<Sample> samples;
};

struct Exposition {
  std::map<std::string, Family> families;

  const Family& family(const std::string& name) const {
    const auto it = families.find(name);
    if (it == families.end()) throw std::runtime_error("no metric family " + name);
    return it->second;
  }
  // The value of the one sample with this name and exactly these labels.
  double value(const std::string& family_name, const std::string& sample_name,
               const std::map<std::string, std::string>& labels = {}) const {
    for (const Sample& s : family(family_name).samples)
      if (s.name == sample_name && s.labels == labels) return s.value;
    throw std::runtime_error("no sample " + sample_name + " in " + family_name);
  }
  double value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    return value(name, name, labels);
  }
  // 0 when the labelled sample has not appeared (a counter not yet incremented).
  double value_or_zero(const std::string& name, const std::map<std::string, std::string>& labels) const {
    for (const Sample& s : family(name).samples)
      if (s.labels == labels) return s.value;
    return 0;
  }
};

double parse_value(const std::string& text) {
  if (text == "+Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  if (text == "NaN") return NAN;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') throw std::runtime_error("not a number: '" + text + "'");
  return v;
}

std::string unescape(const std::string& text, bool quotes) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    if (++i == text.size()) throw std::runtime_error("a lone backslash");
    if (text[i] == 'n')
      out += '\n';
    else if (text[i] == '\\' || (quotes && text[i] == '"'))
      out += text[i];
    else
      throw std::runtime_error(std::string("unknown escape \\") + text[i]);
  }
  return out;
}

bool valid_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != ':') return false;
  return true;
}

// Each family: "# HELP name text", then "# TYPE name type", then its samples,
// whose names are the family's (a histogram's: with _bucket, _sum, _count).
Exposition parse_exposition(const std::string& text) {
  Exposition e;
  std::istringstream lines(text);
  std::string line, current;
  if (text.empty() || text.back() != '\n') throw std::runtime_error("the text must end with a newline");
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      const size_t space = line.find(' ', 7);
      current = line.substr(7, space - 7);
      if (!valid_name(current) || e.families.count(current)) throw std::runtime_error("bad or repeated: " + line);
      e.families[current].help = space == std::string::npos ? "" : unescape(line.substr(space + 1), false);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      if (name != current || !e.families[current].type.empty() || !e.families[current].samples.empty())
        throw std::runtime_error("TYPE not right after its HELP: " + line);
      if (type != "counter" && type != "gauge" && type != "histogram") throw std::runtime_error("type: " + line);
      e.families[current].type = type;
      continue;
    }
    if (line.empty() || line[0] == '#') throw std::runtime_error("unexpected line: '" + line + "'");
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') s.name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (line.at(i) != '}') {
        const size_t eq = line.find("=\"", i);
        const std::string key = line.substr(i, eq - i);
        size_t j = eq + 2;
        std::string raw;
        while (line.at(j) != '"') {
          if (line[j] == '\\') raw += line[j++];
          raw += line.at(j++);
        }
        if (!valid_name(key) || s.labels.count(key)) throw std::runtime_error("label: " + line);
        s.labels[key] = unescape(raw, true);
        i = j + 1;
        if (line.at(i) == ',') ++i;
      }
      ++i;
    }
    if (line.at(i) != ' ') throw std::runtime_error("no space before the value: " + line);
    s.value = parse_value(line.substr(i + 1));
    Family& f = e.families[current];
    const bool own = s.name == current ||
                     (f.type == "histogram" &&
                      (s.name == current + "_bucket" || s.name == current + "_sum" || s.name == current + "_count"));
    if (current.empty() || f.type.empty() || !own) throw std::runtime_error("sample outside its family: " + line);
    if (f.type == "counter" && current.size() > 6 && current.substr(current.size() - 6) == "_total" && s.value < 0)
      throw std::runtime_error("negative counter: " + line);
    f.samples.push_back(std::move(s));
  }
  return e;
}

// A histogram's buckets: `le` equal to `bounds` then +Inf, in that order,
// cumulative (never decreasing), the +Inf bucket equal to _count. Returns _count.
double check_histogram(const Exposition& e, const std::string& name, const std::vector<double>& bounds) {
  const Family& f = e.family(name);
  REQUIRE(f.type == "histogram");
  std::vector<const Sample*> buckets;
  for (const Sample& s : f.samples)
    if (s.name == name + "_bucket") buckets.push_back(&s);
  REQUIRE(buckets.size() == bounds.size() + 1);
  double previous = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    INFO(name << " bucket " << i);
    REQUIRE(buckets[i]->labels.size() == 1);
    const double le = parse_value(buckets[i]->labels.at("le"));
    CHECK(le == (i < bounds.size() ? bounds[i] : INFINITY));
    CHECK(buckets[i]->value >= previous);
    previous = buckets[i]->value;
  }
  const double count = e.value(name, name + "_count");
  CHECK(previous == count);
  CHECK(e.value(name, name + "_sum") >= 0);
  return count;
}

}  // namespace

// --- the primitives ---------------------------------------------------------

TEST_CASE("prometheus_number writes numbers that read back exactly", "[metrics]") {
  CHECK(prometheus_number(1.0) == "1.0");
  CHECK(prometheus_number(2560) == "2560.0");
  CHECK(prometheus_number(0.001) == "0.001");
  CHECK(prometheus_number(0.25) == "0.25");
  CHECK(prometheus_number(0) == "0.0");
  CHECK(prometheus_number(INFINITY) == "+Inf");
  CHECK(prometheus_number(-INFINITY) == "-Inf");
  CHECK(prometheus_number(NAN) == "NaN");
  rc::prop("strtod(prometheus_number(x)) == x", [] {
    const double x = *rc::gen::arbitrary<double>();
    RC_PRE(std::isfinite(x));
    const std::string text = prometheus_number(x);
    RC_ASSERT(std::strtod(text.c_str(), nullptr) == x);
    RC_ASSERT(text.find_first_of(".e") != std::string::npos);
  });
}

TEST_CASE("A histogram counts each value in the first bucket whose bound is >= it", "[metrics]") {
  rc::prop("cumulative counts equal a direct count", [] {
    auto bounds = *rc::gen::container<std::vector<double>>(rc::gen::map(rc::gen::inRange(-1000, 1000),
                                                                        [](int v) { return v / 8.0; }));
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    // Values on the bounds themselves too: `le` is inclusive.
    const auto values = *rc::gen::container<std::vector<double>>(
        rc::gen::oneOf(rc::gen::map(rc::gen::inRange(-1100, 1100), [](int v) { return v / 8.0; }),
                       rc::gen::map(rc::gen::inRange(-1100, 1100), [](int v) { return v / 7.0; })));
    Histogram h(bounds);
    double sum = 0;
    for (double v : values) {
      h.observe(v);
      sum += v;  // the same additions in the same order as the histogram's: equal bits
    }
    const Histogram::Snapshot s = h.snapshot();
    RC_ASSERT(s.upper_bounds == bounds);
    RC_ASSERT(s.cumulative.size() == bounds.size() + 1);
    for (size_t i = 0; i < bounds.size(); ++i)
      RC_ASSERT(s.cumulative[i] == uint64_t(std::count_if(values.begin(), values.end(),
                                                          [&](double v) { return v <= bounds[i]; })));
    RC_ASSERT(s.cumulative.back() == values.size());
    RC_ASSERT(s.count == values.size());
    RC_ASSERT(s.sum == sum);
  });
}

TEST_CASE("Histogram bounds must be finite and strictly increasing", "[metrics]") {
  CHECK_THROWS_AS(Histogram({1.0, 1.0}), std::invalid_argument);
  CHECK_THROWS_AS(Histogram({2.0, 1.0}), std::invalid_argument);
  CHECK_THROWS_AS(Histogram({1.0, INFINITY}), std::invalid_argument);
  CHECK_THROWS_AS(Histogram({NAN}), std::invalid_argument);
  Histogram none({});  // only +Inf
  none.observe(5);
  CHECK(none.snapshot().cumulative == std::vector<uint64_t>{1});
}

TEST_CASE("Counters and histograms lose no update from concurrent threads", "[metrics]") {
  Counter counter;
  Histogram h({1.0, 2.0});
  constexpr int kThreads = 4, kEach = 20000;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          counter.add();
          h.observe(double((i + t) % 3));  // 0, 1, 2: exact in binary, so any order sums to the same
        }
      });
  }
  CHECK(counter.value() == uint64_t(kThreads) * kEach);
  const Histogram::Snapshot s = h.snapshot();
  CHECK(s.count == uint64_t(kThreads) * kEach);
  uint64_t zeros = 0, ones = 0, twos = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kEach; ++i) ((i + t) % 3 == 0 ? zeros : (i + t) % 3 == 1 ? ones : twos)++;
  CHECK(s.cumulative == std::vector<uint64_t>{zeros + ones, zeros + ones + twos, zeros + ones + twos});
  CHECK(s.sum == double(ones + 2 * twos));
}

TEST_CASE("PrometheusText reads back through an independent parser", "[metrics]") {
  PrometheusText out;
  out.family("x_requests_total", "Help with a \\ backslash\nand a newline.", "counter");
  const std::string tricky = "a \"quoted\" \\ value\nover two lines";
  out.sample("x_requests_total", {{"route", "/v1/messages"}, {"status", "200"}}, uint64_t(7));
  out.sample("x_requests_total", {{"route", tricky}, {"status", "404"}}, uint64_t(18446744073709551615ull));
  out.family("x_usage", "A fraction.", "gauge");
  out.sample("x_usage", {}, 0.375);
  Histogram h({0.5, 1.0, 2560.0});
  for (double v : {0.25, 0.5, 0.75, 3000.0}) h.observe(v);
  out.histogram("x_latency_seconds", "Latency.", h.snapshot());

  const Exposition e = parse_exposition(out.text());
  CHECK(e.family("x_requests_total").help == "Help with a \\ backslash\nand a newline.");
  CHECK(e.family("x_requests_total").type == "counter");
  CHECK(e.value("x_requests_total", {{"route", "/v1/messages"}, {"status", "200"}}) == 7);
  CHECK(e.value("x_requests_total", {{"route", tricky}, {"status", "404"}}) == 18446744073709551615.0);
  CHECK(e.value("x_usage") == 0.375);
  CHECK(check_histogram(e, "x_latency_seconds", {0.5, 1.0, 2560.0}) == 4);
  CHECK(e.value("x_latency_seconds", "x_latency_seconds_bucket", {{"le", "0.5"}}) == 2);
  CHECK(e.value("x_latency_seconds", "x_latency_seconds_bucket", {{"le", "2560.0"}}) == 3);
  CHECK(e.value("x_latency_seconds", "x_latency_seconds_sum") == 3001.5);
}

// --- the server ---------------------------------------------------------------

namespace {

struct Usage {
  int prompt = 0, completion = 0;
  std::string finish;
};

// The usage a chat response reports, whole or streamed, either protocol.
Usage usage_of(const std::string& path, const json& body, const Reply& reply) {
  const bool anthropic = path == "/v1/messages";
  json usage;
  std::string finish;
  if (!body.value("stream", false)) {
    const json whole = reply.body_json();
    usage = whole["usage"];
    finish = (anthropic ? whole["stop_reason"] : whole["choices"][0]["finish_reason"]).get<std::string>();
  } else {
    for (const SseEvent& event : parse_sse(reply.body)) {
      if (event.data == "[DONE]") continue;
      const json data = json::parse(event.data);
      if (anthropic && data["type"] == "message_delta") {
        usage = data["usage"];
        finish = data["delta"]["stop_reason"].get<std::string>();
      }
      if (!anthropic && data.contains("usage") && data["usage"].is_object()) usage = data["usage"];
      if (!anthropic && !data["choices"].empty() && data["choices"][0]["finish_reason"].is_string())
        finish = data["choices"][0]["finish_reason"].get<std::string>();
    }
  }
  REQUIRE(usage.is_object());
  const char* prompt = anthropic ? "input_tokens" : "prompt_tokens";
  const char* completion = anthropic ? "output_tokens" : "completion_tokens";
  return Usage{usage[prompt].get<int>(), usage[completion].get<int>(), finish};
}

Exposition scrape(const TestServer& server, const httplib::Headers& headers = {}) {
  const Reply reply = get(server, "/metrics", headers);
  REQUIRE(reply.status == 200);
  CHECK(reply.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  return parse_exposition(reply.body);
}

}  // namespace

TEST_CASE("GET /metrics counts requests, tokens and latencies exactly", "[metrics][endpoints]") {
  TestServerOptions options;
  options.cache = KVCacheKind::Paged;  // prefix hits happen
  TestServer server(options);
  const std::string long_prompt =
      "Once upon a time there was a little girl who lived in a village near the forest, and every day she";
  struct Call {
    std::string path;
    json body;
  };
  json with_usage = openai_body(long_prompt, 6, true);
  with_usage["stream_options"] = {{"include_usage", true}};
  const std::vector<Call> calls = {
      {"/v1/chat/completions", openai_body(long_prompt, 5)},
      {"/v1/chat/completions", openai_body(long_prompt, 7)},  // the same prompt: its pages are cached
      {"/v1/chat/completions", with_usage},
      {"/v1/messages", anthropic_body("Hello there", 4)},
      {"/v1/messages", anthropic_body("A stream", 9, true)},
      {"/v1/chat/completions", openai_body("One token", 1)},
  };
  int prompt_tokens = 0, completion_tokens = 0, lengths = 0, stops = 0;
  int inter_token_gaps = 0;
  for (const Call& call : calls) {
    INFO(call.path << " " << call.body.dump());
    const Reply reply = post(server, call.path, call.body);
    REQUIRE(reply.status == 200);
    const Usage u = usage_of(call.path, call.body, reply);
    prompt_tokens += u.prompt;
    completion_tokens += u.completion;
    inter_token_gaps += u.completion - 1;
    (u.finish == "length" || u.finish == "max_tokens" ? lengths : stops)++;
  }
  // Refused before the engine: counted by status, no tokens, no latency.
  CHECK(post(server, "/v1/chat/completions", json{{"messages", json::array()}}).status == 422);
  CHECK(post(server, "/v1/messages", std::string("{not json")).status == 422);
  CHECK(get(server, "/no/such/route").status == 404);
  const json idle = server.wait_until_idle();  // the engine's figures are published after each step
  const SchedulerStats engine = server.engine().get_stats();

  const Exposition e = scrape(server);
  const auto requests = [&](const std::string& route, const std::string& status) {
    return e.value_or_zero("astrai_http_requests_total", {{"route", route}, {"status", status}});
  };
  CHECK(e.family("astrai_http_requests_total").type == "counter");
  CHECK(requests("/v1/chat/completions", "200") == 4);
  CHECK(requests("/v1/chat/completions", "422") == 1);
  CHECK(requests("/v1/messages", "200") == 2);
  CHECK(requests("/v1/messages", "422") == 1);
  CHECK(requests("other", "404") == 1);
  CHECK(requests("/metrics", "200") == 0);  // this scrape is counted once it is answered
  CHECK(scrape(server).value_or_zero("astrai_http_requests_total", {{"route", "/metrics"}, {"status", "200"}}) == 1);

  CHECK(e.value("astrai_prompt_tokens_total") == prompt_tokens);
  CHECK(e.value("astrai_generation_tokens_total") == completion_tokens);
  CHECK(e.value("astrai_generation_tokens_total") == double(engine.total_tokens));
  CHECK(check_histogram(e, "astrai_time_to_first_token_seconds", ServerMetrics::ttft_buckets()) == calls.size());
  CHECK(check_histogram(e, "astrai_e2e_request_latency_seconds", ServerMetrics::e2e_buckets()) == calls.size());
  CHECK(check_histogram(e, "astrai_inter_token_latency_seconds", ServerMetrics::inter_token_buckets()) ==
        inter_token_gaps);
  CHECK(e.value("astrai_request_success_total", {{"finished_reason", "length"}}) == lengths);
  CHECK(e.value("astrai_request_success_total", {{"finished_reason", "stop"}}) == stops);
  CHECK(e.value("astrai_request_success_total", {{"finished_reason", "abort"}}) == 0);
  CHECK(e.value("astrai_request_success_total", {{"finished_reason", "error"}}) == 0);

  // The engine's figures, idle now.
  CHECK(e.family("astrai_num_requests_running").type == "gauge");
  CHECK(e.value("astrai_num_requests_running") == 0);
  CHECK(e.value("astrai_num_requests_waiting") == 0);
  CHECK(e.value("astrai_kv_cache_usage_perc") == 0);
  CHECK(e.value("astrai_num_preemptions_total") == double(engine.preemptions));
  // Every request was admitted once: each prompt token was looked up once.
  CHECK(e.value("astrai_prefix_cache_queries_total") == prompt_tokens);
  CHECK(e.value("astrai_prefix_cache_hits_total") == double(engine.prefix_hit_tokens));
  CHECK(e.value("astrai_prefix_cache_hits_total") > 0);
  CHECK(e.value("astrai_prefix_cache_hits_total") == idle["prefix_hit_tokens"].get<double>());
}

TEST_CASE("GET /metrics counts an n-request once, and each choice's tokens and finish", "[metrics][endpoints]") {
  TestServer server;
  json body = openai_body("Once upon a time", 6);
  body["n"] = 3;
  body["ignore_eos"] = true;  // every choice makes exactly 6 tokens and ends with length
  const Reply reply = post(server, "/v1/chat/completions", body);
  REQUIRE(reply.status == 200);
  const int prompt = reply.body_json()["usage"]["prompt_tokens"];
  server.wait_until_idle();
  const Exposition e = scrape(server);
  // One prefill, one first token, one end: the prompt and latencies once.
  CHECK(e.value("astrai_prompt_tokens_total") == prompt);
  CHECK(check_histogram(e, "astrai_time_to_first_token_seconds", ServerMetrics::ttft_buckets()) == 1);
  CHECK(check_histogram(e, "astrai_e2e_request_latency_seconds", ServerMetrics::e2e_buckets()) == 1);
  // Gaps within each choice (never between two choices' tokens of one step).
  CHECK(check_histogram(e, "astrai_inter_token_latency_seconds", ServerMetrics::inter_token_buckets()) == 3 * 5);
  CHECK(e.value("astrai_generation_tokens_total") == 3 * 6);
  CHECK(e.value("astrai_request_success_total", {{"finished_reason", "length"}}) == 3);
}

TEST_CASE("GET /metrics shows a running and a waiting request, as the engine does", "[metrics][endpoints]") {
  TestServerOptions options;
  options.max_running = 1;  // the second request waits (and one cache slot: usage 1)
  TestServer server(options);
  server.executor().pause();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  auto wait_for = [&](auto condition) {
    while (!condition() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(condition());
  };
  // The first is admitted (its first step held at the gate), then the
  // second is queued behind it. Then steps run one at a time until the
  // first token is out: the loop publishes its figures after each step and
  // is held inside the next, the figures fixed (however slow this thread:
  // no step runs unless let through).
  Reply first, second;
  std::jthread a([&] { first = try_post(server, "/v1/chat/completions", openai_body("first", 200, true)); });
  server.executor().wait_until_blocked();
  std::jthread b([&] { second = try_post(server, "/v1/messages", anthropic_body("second", 3)); });
  wait_for([&] { return server.engine().get_stats().total_tasks == 2; });
  while (server.engine().get_stats().total_tokens < 1) server.executor().step_once();
  const SchedulerStats engine = server.engine().get_stats();
  REQUIRE(engine.active_tasks + engine.waiting_queue == 2);  // the first is nowhere near its 200 tokens
  const Exposition e = scrape(server);
  CHECK(e.value("astrai_num_requests_running") == 1);
  CHECK(e.value("astrai_num_requests_waiting") == 1);
  CHECK(e.value("astrai_kv_cache_usage_perc") == 1.0);  // the one slot is held
  CHECK(e.value("astrai_time_to_first_token_seconds", "astrai_time_to_first_token_seconds_count") == 1);
  CHECK(e.value("astrai_e2e_request_latency_seconds", "astrai_e2e_request_latency_seconds_count") == 0);
  server.executor().resume();
  a.join();
  b.join();
  CHECK(first.status == 200);
  CHECK(second.status == 200);
}

TEST_CASE("GET /metrics answers before the model loads, without the engine's figures", "[metrics][endpoints]") {
  TestServerOptions options;
  options.load_model = false;
  TestServer server(options);
  CHECK(post(server, "/v1/chat/completions", openai_body("Hi", 2)).status == 503);
  const Exposition e = scrape(server);
  CHECK(e.value("astrai_http_requests_total", {{"route", "/v1/chat/completions"}, {"status", "503"}}) == 1);
  CHECK(e.families.count("astrai_num_requests_running") == 0);
  CHECK(e.value("astrai_time_to_first_token_seconds", "astrai_time_to_first_token_seconds_count") == 0);
}

}  // namespace astrai::test

namespace astrai::test {

// Speculation's counters (docs/speculative-decoding.md): the model is made
// to write a pattern of period 3, which n-gram lookup guesses once it has
// seen it, so most proposals are kept. The same request with
// speculative.n_max 0 gets the same text and adds nothing to the counters.
TEST_CASE("GET /metrics and /stats count n-gram speculation's drafts, proposals and kept proposals; "
          "speculative.n_max 0 opts a request out",
          "[metrics][endpoints][speculative]") {
  TestServerOptions options;
  options.speculation = ngram_speculation({.max_match = 3, .min_match = 2, .tokens = 4});
  TestServer server(options);
  json body = openai_body("Once upon a time", 1);
  body["temperature"] = 0;
  const int prompt = post(server, kChatPath, body).body_json()["usage"]["prompt_tokens"];
  std::vector<int> pattern;
  for (int i = 0; i < 30; ++i) pattern.push_back(server.engine().tokenizer().byte_token("abc"[i % 3]));
  server.executor().script(pattern, prompt, server.engine().tokenizer().eos_id());
  body["max_tokens"] = 40;
  body["speculative.n_max"] = 0;
  const Reply plain = post(server, kChatPath, body);
  REQUIRE(plain.status == 200);
  server.wait_until_idle();
  const Exposition before = scrape(server);
  CHECK(before.value("astrai_spec_decode_num_drafts_total") == 0);
  CHECK(before.value("astrai_spec_decode_num_draft_tokens_total") == 0);

  body.erase("speculative.n_max");
  const Reply speculated = post(server, kChatPath, body);
  REQUIRE(speculated.status == 200);
  const auto content = [](const Reply& r) { return r.body_json()["choices"][0]["message"]["content"]; };
  CHECK(content(speculated) == content(plain));
  CHECK(content(plain) == "abcabcabcabcabcabcabcabcabcabc");
  CHECK(speculated.body_json()["usage"] == plain.body_json()["usage"]);
  const json stats = server.wait_until_idle();
  const Exposition e = scrape(server);
  const double drafts = e.value("astrai_spec_decode_num_drafts_total");
  const double proposed = e.value("astrai_spec_decode_num_draft_tokens_total");
  const double kept = e.value("astrai_spec_decode_num_accepted_tokens_total");
  CHECK(e.family("astrai_spec_decode_num_drafts_total").type == "counter");
  CHECK(drafts > 0);
  CHECK(proposed >= drafts);
  CHECK(proposed <= 4 * drafts);
  CHECK(kept > proposed / 2);  // the pattern is guessed right once seen
  CHECK(kept <= proposed);
  double per_position = 0;
  for (int i = 0; i < 4; ++i)
    per_position +=
        e.value_or_zero("astrai_spec_decode_num_accepted_tokens_per_pos_total", {{"position", std::to_string(i)}});
  CHECK(per_position == kept);
  CHECK(stats["speculative"]["method"] == "ngram");
  CHECK(stats["speculative"]["drafts"].get<double>() == drafts);
  CHECK(stats["speculative"]["draft_tokens"].get<double>() == proposed);
  CHECK(stats["speculative"]["accepted_tokens"].get<double>() == kept);
  // A bad value is the usual 422, naming the field.
  body["speculative.n_max"] = -1;
  const Reply bad = post(server, kChatPath, body);
  CHECK(bad.status == 422);
  CHECK(bad.body.find("speculative.n_max") != std::string::npos);
}

// A draft model identical to the target (`astrai serve --draft-model` with
// the model's own file) guesses the target's argmax: at temperature 0 every
// guess is kept, and the text is the one without speculation. Requests
// that ignore the end token, so that no guess outlives its request.
TEST_CASE("GET /metrics: a draft model identical to the target keeps every guess at temperature 0",
          "[metrics][endpoints][speculative][draft]") {
  TestServerOptions plain_options;
  TestServer plain(plain_options);
  TestServerOptions options;
  options.draft_of_itself = 4;
  TestServer server(options);
  std::vector<std::string> texts;
  for (const char* prompt : {"Once upon a time", "The cat sat", "abcabcabc"}) {
    json body = openai_body(prompt, 30);
    body["temperature"] = 0;
    body["ignore_eos"] = true;
    const Reply speculated = post(server, kChatPath, body);
    const Reply reference = post(plain, kChatPath, body);
    REQUIRE(speculated.status == 200);
    REQUIRE(reference.status == 200);
    CHECK(speculated.body_json()["choices"][0]["message"]["content"] ==
          reference.body_json()["choices"][0]["message"]["content"]);
    CHECK(speculated.body_json()["usage"]["completion_tokens"] == 30);
  }
  const json stats = server.wait_until_idle();
  const Exposition e = scrape(server);
  const double proposed = e.value("astrai_spec_decode_num_draft_tokens_total");
  CHECK(e.value("astrai_spec_decode_num_drafts_total") > 0);
  CHECK(proposed > 0);
  CHECK(e.value("astrai_spec_decode_num_accepted_tokens_total") == proposed);
  CHECK(stats["speculative"]["method"] == "draft_model");
  CHECK(stats["speculative"]["accepted_tokens"].get<double>() == proposed);
}

}  // namespace astrai::test
