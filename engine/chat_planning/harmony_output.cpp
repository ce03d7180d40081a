#include "engine/chat_planning/harmony_output.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/chat_planning/partial_tag.h"

namespace astrai {

namespace {

// The word after `key` in a header: up to whitespace or '<' ("" when absent).
std::string word_after(std::string_view header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string_view::npos) return "";
  const std::string_view rest = header.substr(at + key.size());
  const size_t end = rest.find_first_of(" \t\r\n<");
  return std::string(rest.substr(0, end));
}

struct Destination {
  HarmonyPart part = HarmonyPart::Content;
  std::string name;  // Call: the function's name
};

Destination destination_of(std::string_view header, bool read_calls) {
  const std::string channel = word_after(header, kHarmonyChannel);
  const std::string recipient = word_after(header, "to=");
  constexpr std::string_view kFunctions = "functions.";
  if (recipient.starts_with(kFunctions) && recipient.size() > kFunctions.size()) {
    if (read_calls) return {HarmonyPart::Call, recipient.substr(kFunctions.size())};
    return {HarmonyPart::Content, ""};
  }
  if (!recipient.empty() || channel == "analysis") return {HarmonyPart::Reasoning, ""};
  return {HarmonyPart::Content, ""};
}

// A call's arguments: its body when that is one JSON object, compact.
std::optional<std::string> call_arguments(std::string_view body) {
  const auto json = nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  return json.dump();
}

// One finished (or cut short) message's body into the parts.
void add_message(HarmonyParts& parts, const Destination& to, std::string_view body) {
  switch (to.part) {
    case HarmonyPart::Reasoning: parts.reasoning += body; return;
    case HarmonyPart::Content: parts.content += body; return;
    case HarmonyPart::Call:
      if (auto arguments = call_arguments(body)) parts.calls.push_back({to.name, std::move(*arguments)});
      else parts.content += body;
      return;
  }
}

// Where the next message starts at or after `from`: the first start marker.
size_t next_message(std::string_view text, size_t from) {
  return std::min(text.find(kHarmonyStart, from), text.find(kHarmonyChannel, from));
}

}  // namespace

bool template_writes_harmony(std::string_view chat_template) {
  return chat_template.find(kHarmonyChannel) != std::string_view::npos &&
         chat_template.find(kHarmonyMessage) != std::string_view::npos &&
         chat_template.find(kHarmonyStart) != std::string_view::npos;
}

grammar::ReasoningMarkers harmony_markers(bool answer_is_calls) {
  const std::string open = std::string(kHarmonyChannel) + "analysis" + std::string(kHarmonyMessage);
  const std::string close = std::string(kHarmonyEnd) + std::string(kHarmonyStart) + "assistant";
  const std::string final_open = std::string(kHarmonyChannel) + "final" + std::string(kHarmonyMessage);
  return {open, close, answer_is_calls ? "" : final_open};
}

HarmonyParts parse_harmony(std::string_view output, bool read_calls) {
  HarmonyParts parts;
  size_t at = 0;
  while (at < output.size()) {
    const size_t start = next_message(output, at);
    parts.content += output.substr(at, start == std::string_view::npos ? std::string_view::npos : start - at);
    if (start == std::string_view::npos) break;
    const size_t message = output.find(kHarmonyMessage, start);
    if (message == std::string_view::npos) break;  // a header never finished
    const Destination to = destination_of(output.substr(start, message - start), read_calls);
    const size_t body = message + kHarmonyMessage.size();
    const size_t end = output.find(kHarmonyEnd, body);
    add_message(parts, to, output.substr(body, end == std::string_view::npos ? std::string_view::npos : end - body));
    at = end == std::string_view::npos ? output.size() : end + kHarmonyEnd.size();
  }
  return parts;
}

// Where the next search of a text of `size` bytes for `marker` resumes: no
// occurrence starts before it (one may still end past the text's end).
static size_t resume_at(size_t size, std::string_view marker) {
  return size >= marker.size() ? size - marker.size() + 1 : 0;
}

// The stream keeps only what is undecided in held_ and works through it
// after each piece: step() moves through as many states as the text allows.
// A header and a call's body are held whole until their marker comes;
// searched_ keeps each piece's search to the new bytes (an output of n bytes
// costs O(n), not O(n^2)).
void HarmonyStream::step(HarmonyParts& out) {
  for (;;) {
    switch (state_) {
      case State::Outside: {
        const size_t start = next_message(held_, 0);
        if (start == std::string::npos) {
          const size_t keep =
              std::max(partial_tag_suffix(held_, kHarmonyStart), partial_tag_suffix(held_, kHarmonyChannel));
          out.content += held_.substr(0, held_.size() - keep);
          held_.erase(0, held_.size() - keep);
          return;
        }
        out.content += held_.substr(0, start);
        held_.erase(0, start);
        state_ = State::Header;
        break;
      }
      case State::Header: {
        const size_t message = held_.find(kHarmonyMessage, searched_);
        if (message == std::string::npos) {
          searched_ = resume_at(held_.size(), kHarmonyMessage);
          return;
        }
        const Destination to = destination_of(std::string_view(held_).substr(0, message), read_calls_);
        part_ = to.part;
        call_name_ = to.name;
        held_.erase(0, message + kHarmonyMessage.size());
        searched_ = 0;
        state_ = State::Body;
        break;
      }
      case State::Body: {
        const size_t end = held_.find(kHarmonyEnd, searched_);
        if (end == std::string::npos) {
          if (part_ == HarmonyPart::Call) {  // a call is read whole
            searched_ = resume_at(held_.size(), kHarmonyEnd);
            return;
          }
          const size_t keep = partial_tag_suffix(held_, kHarmonyEnd);
          (part_ == HarmonyPart::Reasoning ? out.reasoning : out.content) += held_.substr(0, held_.size() - keep);
          held_.erase(0, held_.size() - keep);
          return;
        }
        const std::string rest = held_.substr(end + kHarmonyEnd.size());
        held_.resize(end);
        end_message(out);
        held_ = rest;
        searched_ = 0;
        state_ = State::Outside;
        break;
      }
    }
  }
}

// The body in held_ is whole: what is left of it goes to its part.
void HarmonyStream::end_message(HarmonyParts& out) {
  add_message(out, {part_, call_name_}, held_);
  held_.clear();
}

HarmonyParts HarmonyStream::feed(std::string_view piece) {
  HarmonyParts out;
  held_ += piece;
  step(out);
  return out;
}

HarmonyParts HarmonyStream::finish() {
  HarmonyParts out;
  step(out);
  switch (state_) {
    case State::Outside: out.content += held_; break;
    case State::Header: break;  // a header never finished is no text
    case State::Body: end_message(out); break;
  }
  held_.clear();
  searched_ = 0;
  state_ = State::Outside;
  return out;
}

}  // namespace astrai
