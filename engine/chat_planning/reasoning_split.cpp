#include "engine/chat_planning/reasoning_split.h"
#include "engine/chat_planning/partial_tag.h"

#include <algorithm>

namespace astrai {

namespace {

std::string_view open_marker() { return reasoning_markers().open; }
std::string_view close_marker() { return reasoning_markers().close; }

}  // namespace

const grammar::ReasoningMarkers& reasoning_markers() {
  static const grammar::ReasoningMarkers markers{"<think>", "</think>", ""};
  return markers;
}

bool template_has_reasoning(std::string_view chat_template) {
  return chat_template.find(open_marker()) != std::string_view::npos &&
         chat_template.find(close_marker()) != std::string_view::npos;
}

ReasoningSplit split_reasoning(std::string_view output, bool starts_in_reasoning) {
  if (!starts_in_reasoning) {
    if (!output.starts_with(open_marker())) return {"", std::string(output)};
    output.remove_prefix(open_marker().size());
  }
  const size_t close = output.find(close_marker());
  if (close == std::string_view::npos) return {std::string(output), ""};
  return {std::string(output.substr(0, close)), std::string(output.substr(close + close_marker().size()))};
}

bool prompt_opens_reasoning(std::string_view prompt) {
  const size_t open = prompt.rfind(open_marker());
  if (open == std::string_view::npos) return false;
  const size_t close = prompt.rfind(close_marker());
  return close == std::string_view::npos || close < open;
}

bool prompt_closes_reasoning(std::string_view prompt) {
  size_t end = prompt.size();
  while (end > 0 && (prompt[end - 1] == ' ' || prompt[end - 1] == '\n' || prompt[end - 1] == '\t' || prompt[end - 1] == '\r'))
    --end;
  return prompt.substr(0, end).ends_with(close_marker());
}

ReasoningSplit ReasoningStream::feed(std::string_view piece) {
  ReasoningSplit out;
  if (state_ == State::Content) {
    out.content = piece;
    return out;
  }
  held_ += piece;
  if (state_ == State::Start) {
    if (held_.size() < open_marker().size() && open_marker().starts_with(held_)) return out;  // may still become <think>
    if (!held_.starts_with(open_marker())) {
      state_ = State::Content;
      out.content = std::move(held_);
      held_.clear();
      return out;
    }
    held_.erase(0, open_marker().size());
    state_ = State::Reasoning;
  }
  // Reasoning: up to </think>, holding back what may be its start.
  if (const size_t close = held_.find(close_marker()); close != std::string::npos) {
    out.reasoning = held_.substr(0, close);
    out.content = held_.substr(close + close_marker().size());
    held_.clear();
    state_ = State::Content;
    return out;
  }
  const size_t keep = partial_tag_suffix(held_, close_marker());
  out.reasoning = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

ReasoningSplit ReasoningStream::finish() {
  ReasoningSplit out;
  if (state_ == State::Start) out.content = std::move(held_);
  else out.reasoning = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace astrai
