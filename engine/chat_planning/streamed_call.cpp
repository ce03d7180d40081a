#include "engine/chat_planning/streamed_call.h"

#include <nlohmann/json.hpp>

namespace astrai {

namespace {

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A byte of a scalar (a number, true, false, null): whitespace between two of
// them separates tokens and is kept as one space, so that minifying never
// joins two tokens into one ("1 2" stays "1 2"; valid JSON never has it).
bool is_scalar_byte(char c) {
  return c != 0 && c != '{' && c != '}' && c != '[' && c != ']' && c != ':' && c != ',' && c != '"' && !is_json_space(c);
}

}  // namespace

CallHead read_call_head(std::string_view body, bool complete) {
  const CallHead partial{complete ? CallHead::Kind::Mismatch : CallHead::Kind::Partial, "", 0};
  const CallHead mismatch{CallHead::Kind::Mismatch, "", 0};
  size_t i = 0;
  // Skips whitespace, then reads one of `tokens`: Match when the text has
  // it, Partial when the text ends inside it, Mismatch otherwise.
  auto expect = [&](std::initializer_list<std::string_view> tokens) {
    while (i < body.size() && is_json_space(body[i])) ++i;
    const std::string_view rest = body.substr(i);
    bool prefix = false;
    for (const std::string_view token : tokens) {
      if (rest.starts_with(token)) {
        i += token.size();
        return CallHead::Kind::Match;
      }
      prefix = prefix || token.starts_with(rest);
    }
    return prefix ? CallHead::Kind::Partial : CallHead::Kind::Mismatch;
  };
  for (auto tokens : {std::initializer_list<std::string_view>{"{"}, {"\"name\""}, {":"}})
    if (const auto kind = expect(tokens); kind != CallHead::Kind::Match) return kind == CallHead::Kind::Partial ? partial : mismatch;
  // The name: a JSON string, decoded.
  while (i < body.size() && is_json_space(body[i])) ++i;
  if (i == body.size()) return partial;
  if (body[i] != '"') return mismatch;
  size_t end = i + 1;
  for (bool escaped = false; end < body.size(); ++end) {
    if (escaped) escaped = false;
    else if (body[end] == '\\') escaped = true;
    else if (body[end] == '"') break;
  }
  if (end == body.size()) return partial;
  const nlohmann::json name = nlohmann::json::parse(body.substr(i, end + 1 - i), nullptr, false);
  if (!name.is_string() || name.get<std::string>().empty()) return mismatch;
  i = end + 1;
  for (auto tokens : {std::initializer_list<std::string_view>{","}, {"\"arguments\"", "\"parameters\""}, {":"}, {"{"}})
    if (const auto kind = expect(tokens); kind != CallHead::Kind::Match) return kind == CallHead::Kind::Partial ? partial : mismatch;
  return {CallHead::Kind::Match, name.get<std::string>(), i - 1};
}

size_t ArgumentsMinifier::feed(std::string_view text, std::string& out) {
  size_t i = 0;
  for (; i < text.size() && !closed_; ++i) {
    const char c = text[i];
    if (in_string_) {
      out += c;
      if (escaped_) escaped_ = false;
      else if (c == '\\') escaped_ = true;
      else if (c == '"') in_string_ = false;
      last_ = c;
      continue;
    }
    if (is_json_space(c)) {
      pending_space_ = true;
      continue;
    }
    if (pending_space_ && is_scalar_byte(last_) && is_scalar_byte(c)) out += ' ';
    pending_space_ = false;
    out += c;
    last_ = c;
    if (c == '"') in_string_ = true;
    else if (c == '{' || c == '[') ++depth_;
    else if ((c == '}' || c == ']') && --depth_ == 0) closed_ = true;
  }
  return i;
}

std::string minify_arguments(std::string_view text) {
  std::string out;
  ArgumentsMinifier().feed(text, out);
  return out;
}

}  // namespace astrai
