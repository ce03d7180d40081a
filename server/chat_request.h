// What a chat request asks for once a protocol's JSON shape is unpacked, and
// what it got: the common ground between ProtocolHandler and the
// ResponseBuilders of each protocol.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_message.h"
#include "engine/generation_request.h"
#include "reference/sampling/sampling_params.h"

namespace astrai {

struct ChatRequest {
  std::vector<ChatMessage> messages;  // in order; never empty
  // nullopt: what the context leaves after the prompt (OpenAI's and vLLM's
  // default; ProtocolHandler fills it in once the prompt is encoded).
  // Anthropic's protocol requires the field.
  std::optional<int> max_tokens;
  SamplingParams sampling;            // the served model's defaults (ServedModel::default_sampling) unless given
  std::vector<std::string> stop;      // stop sequences, none empty
  bool stream = false;
  bool ignore_eos = false;            // extension: always generate max_tokens
};

struct CompletionResult {
  std::string text;           // stop sequence excluded
  FinishReason reason = FinishReason::Eos;
  std::string stop_sequence;  // when reason == StopSequence
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

}  // namespace astrai
