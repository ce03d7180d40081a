#include "server/metrics/prometheus.h"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace astrai {

namespace {

// Label values escape \, " and newline; HELP text escapes \ and newline.
void append_escaped(std::string& out, std::string_view text, bool quotes) {
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quotes)
      out += "\\\"";
    else
      out += c;
  }
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i]) || (i > 0 && !(bounds_[i] > bounds_[i - 1])))
      throw std::invalid_argument("histogram bounds must be finite and strictly increasing");
  }
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double value) {
  size_t bucket = 0;
  while (bucket < bounds_.size() && !(value <= bounds_[bucket])) ++bucket;  // NaN goes to +Inf
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  s.cumulative.reserve(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    s.count += counts_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(s.count);
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::string prometheus_number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  std::string text(buffer, end);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

void PrometheusText::family(std::string_view name, std::string_view help, std::string_view type) {
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  append_escaped(text_, help, false);
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type;
  text_ += '\n';
}

void PrometheusText::name_and_labels(std::string_view name, const Labels& labels) {
  text_ += name;
  if (labels.empty()) return;
  text_ += '{';
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) text_ += ',';
    text_ += labels[i].first;
    text_ += "=\"";
    append_escaped(text_, labels[i].second, true);
    text_ += '"';
  }
  text_ += '}';
}

void PrometheusText::sample(std::string_view name, const Labels& labels, uint64_t value) {
  name_and_labels(name, labels);
  text_ += ' ';
  text_ += std::to_string(value);
  text_ += '\n';
}

void PrometheusText::sample(std::string_view name, const Labels& labels, double value) {
  name_and_labels(name, labels);
  text_ += ' ';
  text_ += prometheus_number(value);
  text_ += '\n';
}

void PrometheusText::histogram(std::string_view name, std::string_view help, const Histogram::Snapshot& h) {
  family(name, help, "histogram");
  const std::string base(name);
  for (size_t i = 0; i < h.cumulative.size(); ++i) {
    const std::string le = i < h.upper_bounds.size() ? prometheus_number(h.upper_bounds[i]) : "+Inf";
    sample(base + "_bucket", {{"le", le}}, h.cumulative[i]);
  }
  sample(base + "_sum", {}, h.sum);
  sample(base + "_count", {}, h.count);
}

}  // namespace astrai
