#include "engine/chat_planning/tool_call_parser.h"
#include "engine/chat_planning/partial_tag.h"
#include "engine/chat_planning/streamed_call.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

namespace astrai {

namespace {

using nlohmann::ordered_json;

// The markers, from each family's row (tool_call_formats.h).
std::string_view hermes_open() { return tool_call_format(ToolCallFamily::Hermes)->call_marker; }
std::string_view hermes_close() { return tool_call_format(ToolCallFamily::Hermes)->call_end_marker; }
std::string_view python_tag() { return tool_call_format(ToolCallFamily::Llama3)->call_marker; }
std::string_view mistral_marker() { return tool_call_format(ToolCallFamily::Mistral)->call_marker; }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool all_space(std::string_view s) { return std::all_of(s.begin(), s.end(), is_space); }
size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// A call from a parsed JSON value, or nullopt when it is not one.
std::optional<ParsedToolCall> call_of(const ordered_json& value) {
  if (!value.is_object() || !value.contains("name") || !value["name"].is_string()) return std::nullopt;
  ParsedToolCall call{value["name"].get<std::string>(), "{}"};
  if (call.name.empty()) return std::nullopt;
  const ordered_json* arguments = nullptr;
  for (const char* key : {"arguments", "parameters"})
    if (value.contains(key)) {
      arguments = &value[key];
      break;
    }
  if (!arguments) return call;
  if (arguments->is_object()) {
    call.arguments = arguments->dump();
    return call;
  }
  if (arguments->is_string()) {  // some models write the arguments as a JSON string
    const ordered_json inner = ordered_json::parse(arguments->get<std::string>(), nullptr, false);
    if (inner.is_object()) {
      call.arguments = inner.dump();
      return call;
    }
  }
  return std::nullopt;
}

std::optional<ParsedToolCall> call_of_text(std::string_view text) {
  const ordered_json value = ordered_json::parse(text, nullptr, false);  // a discarded value on bad JSON
  if (value.is_discarded()) return std::nullopt;
  return call_of(value);
}

// Index just past the JSON object or array that starts at `start`, found by
// its brackets (strings and escapes skipped); npos when it never closes.
size_t json_value_end(std::string_view s, size_t start) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = start; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// Where a hermes block closes, `body` being all the text after its
// "<tool_call>": at the "</tool_call>" that follows the block's JSON object
// (whitespace between), so that a string in the arguments may hold
// "</tool_call>" (the grammar lets it); when the body is not such an object,
// at the first "</tool_call>" (vLLM's rule). npos: not closed (yet). While
// more text may come (!complete), an object still open or a close tag not
// yet whole waits rather than falling back, so that a stream decides as the
// whole text does.
size_t hermes_close(std::string_view body, bool complete) {
  const size_t start = skip_space(body, 0);
  if (start == body.size() && !complete) return std::string_view::npos;  // may still open an object
  if (start < body.size() && body[start] == '{') {
    const size_t end = json_value_end(body, start);
    if (end == std::string_view::npos && !complete) return std::string_view::npos;
    if (end != std::string_view::npos) {
      const size_t tag = skip_space(body, end);
      const std::string_view rest = body.substr(tag);
      if (rest.starts_with(hermes_close())) return tag;
      if (!complete && (tag == body.size() || hermes_close().starts_with(rest))) return std::string_view::npos;
    }
  }
  return body.find(hermes_close());
}

ParsedToolCalls drop_space_only_content(ParsedToolCalls parsed) {
  if (!parsed.calls.empty() && all_space(parsed.content)) parsed.content.clear();
  return parsed;
}

ParsedToolCalls parse_hermes(std::string_view text) {
  ParsedToolCalls out;
  std::string run;          // text since the last call: content, unless it only separates calls
  bool after_call = false;  // a call came before `run`
  auto place_run = [&] {    // a call or the end follows `run`
    if (!(after_call && all_space(run))) out.content += run;
    run.clear();
  };
  size_t pos = 0;
  for (;;) {
    const size_t open = text.find(hermes_open(), pos);
    if (open == std::string_view::npos) {
      run += text.substr(pos);
      break;
    }
    run += text.substr(pos, open - pos);
    const size_t body_at = open + hermes_open().size();
    const std::string_view rest = text.substr(body_at);
    if (const CallHead head = read_call_head(rest, true); head.kind == CallHead::Kind::Match) {
      // A call from its head on: the arguments object, minified (all the
      // text left when it never closes), then the block to its </tool_call>.
      place_run();
      const size_t arguments_end = json_value_end(rest, head.arguments_at);
      const std::string_view arguments = rest.substr(head.arguments_at, arguments_end == std::string_view::npos
                                                                             ? std::string_view::npos
                                                                             : arguments_end - head.arguments_at);
      out.calls.push_back({head.name, minify_arguments(arguments)});
      after_call = true;
      const size_t close = arguments_end == std::string_view::npos ? arguments_end : rest.find(hermes_close(), arguments_end);
      pos = close == std::string_view::npos ? text.size() : body_at + close + hermes_close().size();
      continue;
    }
    const size_t found = hermes_close(text.substr(body_at), true);
    const size_t close = found == std::string_view::npos ? found : body_at + found;
    const size_t end = close == std::string_view::npos ? text.size() : close + hermes_close().size();
    const std::string_view body =
        text.substr(body_at, (close == std::string_view::npos ? text.size() : close) - body_at);
    if (auto call = call_of_text(body)) {
      place_run();
      out.calls.push_back(std::move(*call));
      after_call = true;
    } else {
      run += text.substr(open, end - open);  // not a call: the block is content
    }
    pos = end;
  }
  place_run();
  return drop_space_only_content(std::move(out));
}

ParsedToolCalls parse_llama3(std::string_view text) {
  const ParsedToolCalls as_content{std::string(text), {}};
  size_t i = skip_space(text, 0);
  if (text.substr(i).starts_with(python_tag())) i = skip_space(text, i + python_tag().size());
  if (i >= text.size() || text[i] != '{') return as_content;
  ParsedToolCalls out;
  while (i < text.size()) {
    const size_t end = json_value_end(text, i);
    if (end == std::string_view::npos) return as_content;
    auto call = call_of_text(text.substr(i, end - i));
    if (!call) return as_content;
    out.calls.push_back(std::move(*call));
    i = skip_space(text, end);
    if (i < text.size() && text[i] == ';') i = skip_space(text, i + 1);  // "; " between calls
    if (i < text.size() && text[i] != '{') return as_content;
  }
  return out;
}

ParsedToolCalls parse_mistral(std::string_view text) {
  const ParsedToolCalls as_content{std::string(text), {}};
  size_t list_at;
  ParsedToolCalls out;
  if (const size_t marker = text.find(mistral_marker()); marker != std::string_view::npos) {
    out.content = text.substr(0, marker);
    list_at = marker + mistral_marker().size();
  } else {
    list_at = skip_space(text, 0);
    if (list_at >= text.size() || text[list_at] != '[') return as_content;
    out.content = text.substr(0, list_at);
  }
  const ordered_json value = ordered_json::parse(text.substr(list_at), nullptr, false);
  if (value.is_discarded()) return as_content;
  const ordered_json list = value.is_array() ? value : ordered_json::array({value});
  for (const ordered_json& item : list) {
    auto call = call_of(item);
    if (!call) return as_content;
    out.calls.push_back(std::move(*call));
  }
  if (out.calls.empty()) return as_content;
  return drop_space_only_content(std::move(out));
}

}  // namespace

ParsedToolCalls parse_tool_calls(std::string_view output, ToolCallFamily family) {
  switch (family) {
    case ToolCallFamily::Hermes: return parse_hermes(output);
    case ToolCallFamily::Llama3: return parse_llama3(output);
    case ToolCallFamily::Mistral: return parse_mistral(output);
    case ToolCallFamily::None: break;
    case ToolCallFamily::Harmony: break;  // read with its reasoning: harmony_output.h
  }
  return {std::string(output), {}};
}

void ToolCallStream::emit_content(std::string_view text, StreamedToolCalls& out) {
  std::string joined;
  if (after_call_) {  // whitespace after a call is content only when text follows it before the next call
    between_space_ += text;
    if (all_space(between_space_)) return;
    joined = std::move(between_space_);
    between_space_.clear();
    after_call_ = false;
    text = joined;
  }
  if (!content_started_) {
    held_space_ += text;
    if (all_space(held_space_)) return;
    text = held_space_;
    content_started_ = true;
  }
  out.content += text;
  shown_content_ += text.size();
  if (text.data() == held_space_.data()) held_space_.clear();
}

void ToolCallStream::emit_call(StreamedToolCalls& out, ToolCallPiece piece) {
  if (!piece.name.empty()) {
    ++calls_;
    between_space_.clear();  // it only separated two calls
    after_call_ = true;
  } else if (!out.calls.empty() && !out.calls.back().ends) {  // more of the call this part already shows
    out.calls.back().arguments += piece.arguments;
    out.calls.back().ends = piece.ends;
    return;
  }
  out.calls.push_back(std::move(piece));
}

void ToolCallStream::end_block() {
  inside_block_ = false;
  block_ = Block::Head;
}

void ToolCallStream::hermes_step(StreamedToolCalls& out, bool complete) {
  for (;;) {
    if (!inside_block_) {
      const size_t open = held_.find(hermes_open());
      if (open == std::string::npos) {
        const size_t keep = partial_tag_suffix(held_, hermes_open());
        emit_content(std::string_view(held_).substr(0, held_.size() - keep), out);
        held_.erase(0, held_.size() - keep);
        return;
      }
      emit_content(std::string_view(held_).substr(0, open), out);
      held_.erase(0, open + hermes_open().size());
      inside_block_ = true;
      block_ = Block::Head;
    }
    if (block_ == Block::Head) {
      const CallHead head = read_call_head(held_, complete);
      if (head.kind == CallHead::Kind::Partial) return;
      if (head.kind == CallHead::Kind::Match) {
        emit_call(out, {head.name, "", false});
        held_.erase(0, head.arguments_at);
        minifier_ = ArgumentsMinifier();
        block_ = Block::Arguments;
      } else {
        block_ = Block::Whole;
      }
    }
    if (block_ == Block::Arguments) {
      std::string arguments;
      held_.erase(0, minifier_.feed(held_, arguments));
      const bool ends = minifier_.closed() || complete;  // complete: the output ended inside the arguments
      if (!arguments.empty() || ends) emit_call(out, {"", std::move(arguments), ends});
      if (!minifier_.closed()) {
        if (complete) end_block();
        return;
      }
      block_ = Block::Rest;
    }
    if (block_ == Block::Rest) {
      const size_t close = held_.find(hermes_close());
      if (close == std::string::npos) {
        if (complete) {  // the output ended before the block's </tool_call>
          held_.clear();
          end_block();
        } else {
          held_.erase(0, held_.size() - partial_tag_suffix(held_, hermes_close()));
        }
        return;
      }
      held_.erase(0, close + hermes_close().size());
      end_block();
      continue;
    }
    const size_t close = hermes_close(held_, complete);
    if (close == std::string::npos) return;  // the block goes on
    const std::string body = held_.substr(0, close);
    if (auto call = call_of_text(body)) {
      emit_call(out, {std::move(call->name), std::move(call->arguments), true});
    } else {
      emit_content(std::string(hermes_open()) + body + std::string(hermes_close()), out);
    }
    held_.erase(0, close + hermes_close().size());
    end_block();
  }
}

StreamedToolCalls ToolCallStream::feed(std::string_view piece) {
  StreamedToolCalls out;
  output_ += piece;
  if (family_ == ToolCallFamily::None) {
    out.content = piece;
    return out;
  }
  if (deferred_) return out;
  if (plain_ && family_ == ToolCallFamily::Llama3) {
    emit_content(piece, out);
    return out;
  }
  held_ += piece;
  if (family_ == ToolCallFamily::Hermes) {
    hermes_step(out, false);
    return out;
  }
  if (!plain_) {  // the output's start decides
    const size_t i = skip_space(held_, 0);
    if (i == held_.size()) return out;
    const std::string_view rest = std::string_view(held_).substr(i);
    if (family_ == ToolCallFamily::Llama3) {
      if (rest.size() < python_tag().size() && python_tag().starts_with(rest)) return out;
      if (rest.starts_with(python_tag()) || rest[0] == '{') {
        deferred_ = true;
        return out;
      }
      plain_ = true;
      emit_content(held_, out);
      held_.clear();
      return out;
    }
    if (rest[0] == '[') {  // mistral: a list (or [TOOL_CALLS]) from the start
      deferred_ = true;
      return out;
    }
    plain_ = true;
  }
  // mistral: content until [TOOL_CALLS], then the list to the end.
  if (const size_t marker = held_.find(mistral_marker()); marker != std::string::npos) {
    emit_content(std::string_view(held_).substr(0, marker), out);
    deferred_ = true;
    return out;
  }
  const size_t keep = partial_tag_suffix(held_, mistral_marker());
  emit_content(std::string_view(held_).substr(0, held_.size() - keep), out);
  held_.erase(0, held_.size() - keep);
  return out;
}

StreamedToolCalls ToolCallStream::finish() {
  StreamedToolCalls out;
  if (family_ == ToolCallFamily::None) return out;
  if (deferred_) {
    // The whole output decides; what was shown is a prefix of its content.
    ParsedToolCalls whole = parse_tool_calls(output_, family_);
    out.content = whole.content.substr(std::min(shown_content_, whole.content.size()));
    for (ParsedToolCall& call : whole.calls) out.calls.push_back({std::move(call.name), std::move(call.arguments), true});
    return out;
  }
  if (family_ == ToolCallFamily::Hermes) hermes_step(out, true);  // blocks that waited for more text
  if (family_ == ToolCallFamily::Hermes && inside_block_) {  // a block without a head the output never closed
    if (auto call = call_of_text(held_)) {
      emit_call(out, {std::move(call->name), std::move(call->arguments), true});
    } else {
      emit_content(std::string(hermes_open()) + held_, out);
    }
  } else {
    emit_content(held_, out);
  }
  held_.clear();
  if (!content_started_ && calls_ == 0) out.content += held_space_;  // the output's only content
  held_space_.clear();
  return out;
}

}  // namespace astrai
