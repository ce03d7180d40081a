// Prometheus metrics kept in atomics, and their text exposition (format
// 0.0.4: https://prometheus.io/docs/instrumenting/exposition_formats/).
//
//   Counter requests;                        requests.add();            // any thread, no lock
//   Histogram latency({0.1, 0.5, 1.0});      latency.observe(0.3);      // any thread, no lock
//   PrometheusText text;
//   text.family("astrai_requests_total", "Requests served.", "counter");
//   text.sample("astrai_requests_total", {{"route", "/health"}}, requests.value());
//   text.histogram("astrai_latency_seconds", "Latency.", latency.snapshot());
//
// Recording is a relaxed atomic add (a histogram: one per bucket found, one
// for the sum); only a scrape reads every cell. A histogram keeps per-bucket
// counts and the scrape makes them cumulative, so the exposed buckets are
// monotone and the +Inf bucket equals _count even while observations race it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace astrai {

class Counter {
 public:
  void add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Histogram {
 public:
  // `upper_bounds`: finite, strictly increasing (std::invalid_argument
  // otherwise); the +Inf bucket is implied.
  explicit Histogram(std::vector<double> upper_bounds);

  // Counts `value` in the first bucket whose bound is >= value (Prometheus'
  // `le`, less than or equal), or in +Inf.
  void observe(double value);

  struct Snapshot {
    std::vector<double> upper_bounds;  // without +Inf
    std::vector<uint64_t> cumulative;  // one per bound, then +Inf (== count)
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot snapshot() const;

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1, not cumulative
  std::atomic<double> sum_{0};
};

// A number as the exposition format writes it: the shortest text that reads
// back as the same double, "+Inf", "-Inf", "NaN"; integral values get ".0"
// (as the Go and Python clients write `le` bounds: le="1.0", not le="1").
std::string prometheus_number(double value);

using Labels = std::vector<std::pair<std::string, std::string>>;

// Builds one exposition text. Each metric family is introduced by family()
// (its # HELP and # TYPE lines) before its samples.
class PrometheusText {
 public:
  // type: "counter", "gauge" or "histogram".
  void family(std::string_view name, std::string_view help, std::string_view type);
  void sample(std::string_view name, const Labels& labels, uint64_t value);
  void sample(std::string_view name, const Labels& labels, double value);
  // family() plus _bucket{le=...} (cumulative, then +Inf), _sum and _count.
  void histogram(std::string_view name, std::string_view help, const Histogram::Snapshot& h);

  const std::string& text() const { return text_; }

 private:
  void name_and_labels(std::string_view name, const Labels& labels);
  std::string text_;
};

}  // namespace astrai
