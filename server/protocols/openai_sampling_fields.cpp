// OpenAI's (and vLLM's) sampling and logprobs fields (see openai_sampling_fields.h).
#include "server/protocols/openai_sampling_fields.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>
#include <string>

#include "reference/sampling/logprobs.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

// A number field within [low, high] (low_open: > low), as a float: a value
// past float's range becomes the largest float, a positive one below it the
// smallest, so that it stays inside the bounds it passed.
void read_bounded(FieldChecker& check, const json& body, const char* key, double low, bool low_open, double high,
                  float& out) {
  const json loc = json::array({"body", key});
  const json* v = check.field(body, json::array({"body"}), key);
  if (!v) return;
  const auto x = check.number(*v, loc);
  if (!x) return;
  const bool low_ok = low_open ? *x > low : *x >= low, high_ok = *x <= high;
  if (!low_ok) low_open ? check.above(*x, low, loc) : check.at_least(*x, low, loc);
  if (!high_ok) check.at_most(*x, high, loc);
  if (!low_ok || !high_ok) return;
  out = float(std::min<double>(*x, std::numeric_limits<float>::max()));
  if (*x > 0 && out == 0.0f) out = std::numeric_limits<float>::denorm_min();
}

void read_logit_bias(FieldChecker& check, const json& value, std::vector<std::pair<int, float>>& out) {
  const json loc = json::array({"body", "logit_bias"});
  if (!check.is_object(value, loc)) return;
  std::set<long long> seen;  // "7" and "07" name one token: a second bias for it is ambiguous
  for (const auto& [key, bias] : value.items()) {
    const json entry_loc = loc_append(loc, key);
    long long id = -1;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (error != std::errc() || end != key.data() + key.size() || id < 0 || id > std::numeric_limits<int>::max()) {
      check.add(entry_loc, "Keys should be token ids: integers >= 0", "int_parsing");
      continue;
    }
    if (!seen.insert(id).second) {
      check.add(entry_loc, "Token id " + std::to_string(id) + " is given more than once", "value_error");
      continue;
    }
    const auto x = check.number(bias, entry_loc);
    if (!x) continue;
    if (!(*x >= -100.0 && *x <= 100.0)) {
      check.at_least(*x, -100, entry_loc);
      check.at_most(*x, 100, entry_loc);
      continue;
    }
    out.emplace_back(int(id), float(*x));
  }
}

void read_stop_token_ids(FieldChecker& check, const json& value, std::vector<int>& out) {
  const json loc = json::array({"body", "stop_token_ids"});
  if (!check.is_array(value, loc)) return;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const json item_loc = loc_append(loc, i);
    const auto n = check.integer(value[i], item_loc);
    if (!n) continue;
    check.at_least(double(*n), 0, item_loc);
    if (*n >= 0) out.push_back(int(std::min<long long>(*n, std::numeric_limits<int>::max())));
  }
}

}  // namespace

void read_openai_sampling_fields(FieldChecker& check, const json& body, ChatRequest& request) {
  const json loc = json::array({"body"});
  SamplingParams& s = request.sampling;
  read_bounded(check, body, "presence_penalty", -2.0, false, 2.0, s.presence_penalty);
  read_bounded(check, body, "frequency_penalty", -2.0, false, 2.0, s.frequency_penalty);
  read_bounded(check, body, "min_p", 0.0, false, 1.0, s.min_p);
  read_bounded(check, body, "repetition_penalty", 0.0, true, std::numeric_limits<double>::infinity(),
               s.repetition_penalty);
  if (const json* v = check.field(body, loc, "logit_bias")) read_logit_bias(check, *v, s.logit_bias);
  if (const json* v = check.field(body, loc, "stop_token_ids")) read_stop_token_ids(check, *v, request.stop_token_ids);
  bool logprobs = false;
  if (const json* v = check.field(body, loc, "logprobs"))
    if (const auto b = check.boolean(*v, loc_append(loc, "logprobs"))) logprobs = *b;
  int top = 0;
  if (const json* v = check.field(body, loc, "top_logprobs"))
    if (const auto n = check.integer(*v, loc_append(loc, "top_logprobs"))) {
      check.at_least(double(*n), 0, loc_append(loc, "top_logprobs"));
      check.at_most(double(*n), kMaxTopLogprobs, loc_append(loc, "top_logprobs"));
      if (*n > 0 && !logprobs)
        check.add(loc_append(loc, "top_logprobs"), "top_logprobs needs logprobs to be true", "value_error");
      top = int(std::clamp<long long>(*n, 0, kMaxTopLogprobs));
    }
  request.logprobs = logprobs ? top : -1;
}

void check_token_ids(FieldChecker& check, const ChatRequest& request, int vocab_size) {
  const std::string outside = "Input should be a token id below the vocabulary size " + std::to_string(vocab_size);
  for (const auto& [id, bias] : request.sampling.logit_bias)
    if (id >= vocab_size) check.add(json::array({"body", "logit_bias", std::to_string(id)}), outside, "less_than");
  for (std::size_t i = 0; i < request.stop_token_ids.size(); ++i)
    if (request.stop_token_ids[i] >= vocab_size)
      check.add(json::array({"body", "stop_token_ids", i}), outside, "less_than");
  // /v1/completions prompts of ids (a single list is at ["body", "prompt", j]).
  for (std::size_t p = 0; p < request.prompts.size(); ++p) {
    if (!request.prompts[p].ids) continue;
    const std::vector<int>& ids = *request.prompts[p].ids;
    for (std::size_t j = 0; j < ids.size(); ++j)
      if (ids[j] >= vocab_size)
        check.add(request.prompts.size() == 1 ? json::array({"body", "prompt", j}) : json::array({"body", "prompt", p, j}),
                  outside, "less_than");
  }
}

std::optional<bool> read_choices_and_stream_options(FieldChecker& check, const json& body, ChatRequest& request) {
  const json loc = json::array({"body"});
  if (const json* v = check.field(body, loc, "n"))
    if (auto n = check.integer(*v, loc_append(loc, "n"))) {
      check.at_least(double(*n), 1, loc_append(loc, "n"));
      request.n = int(std::clamp<long long>(*n, 1, 1 << 30));
    }
  std::optional<bool> include_usage;
  if (const json* options = check.field(body, loc, "stream_options");
      options && check.is_object(*options, loc_append(loc, "stream_options"))) {
    const json options_loc = loc_append(loc, "stream_options");
    if (const json* v = check.field(*options, options_loc, "include_usage"))
      include_usage = check.boolean(*v, loc_append(options_loc, "include_usage"));
  }
  return include_usage;
}

}  // namespace astrai
