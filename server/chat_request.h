// What a chat request asks for once a protocol's JSON shape is unpacked, and
// what it got: the common ground between ProtocolHandler and the
// ResponseBuilders of each protocol.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_message.h"
#include "engine/grammar/token_constraint.h"
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
  std::vector<int> stop_token_ids;    // extension (vLLM): more ids that end generation
  int logprobs = -1;                  // -1: none; else how many top tokens (OpenAI logprobs / top_logprobs)
  int n = 1;                          // choices of the prompt (OpenAI's n; the engine bounds it by --max-running)
  // What the output must match (response_format, structured_outputs, guided_*:
  // server/structured_output_fields.h); nullopt: anything.
  std::optional<grammar::ConstraintSpec> constraint;
};

// One choice's outcome (a request for n choices has n of them).
struct CompletionResult {
  int index = 0;              // which choice
  std::string text;           // stop sequence excluded
  FinishReason reason = FinishReason::Eos;
  std::string stop_sequence;  // when reason == StopSequence
  int prompt_tokens = 0;
  int completion_tokens = 0;
  // OpenAI's choices[].logprobs.content entries, one per token (null when
  // not asked for); ProtocolHandler makes them (it has the tokenizer).
  nlohmann::ordered_json logprobs_content = nullptr;
};

}  // namespace astrai
