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

// One prompt of a /v1/completions request: text (tokenized with BOS first,
// as `astrai generate` does) or the token ids themselves.
struct RawPrompt {
  std::string text;
  std::optional<std::vector<int>> ids;  // set: the prompt is these ids (never empty)
};

// How the model may use the request's tools (OpenAI's tool_choice,
// Anthropic's tool_choice.type): none, auto, required (Anthropic's any), or
// one named function (Anthropic's tool). Required and named are enforced by
// a grammar (tool_request.h's tool_call_spec); auto is not.
struct ToolChoice {
  enum class Mode { None, Auto, Required, Named };
  Mode mode = Mode::None;
  std::string name;  // Named: the function
};

// A tool call the model made, as responses carry it.
struct ToolCall {
  std::string id;         // call_… (OpenAI), toolu_… (Anthropic), 9 characters for Mistral's templates
  std::string name;
  std::string arguments;  // JSON text of an object
};

struct ChatRequest {
  std::vector<ChatMessage> messages;  // in order; never empty (chat protocols); empty when `prompts` is set
  // /v1/completions: the prompts, each run as its own n choices, with no chat
  // template. Choice index = prompt index * n + choice of that prompt.
  std::vector<RawPrompt> prompts;
  bool echo = false;  // completions: each choice's text starts with its prompt's
  // nullopt: what the context leaves after the prompt (OpenAI's and vLLM's
  // default; ProtocolHandler fills it in once the prompt is encoded).
  // Anthropic's protocol requires the field.
  std::optional<int> max_tokens;
  SamplingParams sampling;            // the served model's defaults (ServedModel::default_sampling) unless given
  std::vector<std::string> stop;      // stop sequences, none empty
  bool stream = false;
  bool ignore_eos = false;            // extension: always generate max_tokens
  int max_proposed = -1;              // extension (llama.cpp's speculative.n_max): -1 the server's, 0 off
  std::vector<int> stop_token_ids;    // extension (vLLM): more ids that end generation
  int logprobs = -1;                  // -1: none; else how many top tokens (OpenAI logprobs / top_logprobs)
  int n = 1;                          // choices of the prompt (OpenAI's n; the engine bounds it by --max-running)
  // What the output must match (response_format, structured_outputs, guided_*:
  // server/structured_output_fields.h); nullopt: anything.
  std::optional<grammar::ConstraintSpec> constraint;
  // Tools as chat templates read them (transformers' shape, OpenAI's):
  // [{"type": "function", "function": {"name", "description", "parameters"}}];
  // null when the request has none. Anthropic's are converted to it.
  nlohmann::ordered_json tools = nullptr;
  ToolChoice tool_choice;             // Auto when tools are given and no choice is
  bool parallel_tool_calls = true;    // false: only the first call is returned
  // More template variables (chat_template_kwargs, e.g. {"enable_thinking": false}); null or an object.
  nlohmann::ordered_json chat_template_kwargs = nullptr;
  // How long a reasoning model may think (engine/grammar/thinking_budget.h):
  // thinking_budget in tokens (Anthropic's thinking.budget_tokens), else
  // reasoning_effort's budget (none, minimal, low, medium, high:
  // reasoning_effort.h); neither: a budget only when the output is
  // constrained (half of max_tokens), so that the answer comes.
  std::optional<int> thinking_budget;
  std::string reasoning_effort;
};

// One choice's outcome (a request for n choices has n of them).
struct CompletionResult {
  int index = 0;              // which choice
  std::string text;           // stop sequence excluded; the content when reasoning or tool calls are split out
  std::string reasoning;      // the reasoning split out of the text ("" when none)
  std::vector<ToolCall> tool_calls;  // the calls parsed out of the text
  FinishReason reason = FinishReason::Eos;
  std::string stop_sequence;  // when reason == StopSequence
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;  // of prompt_tokens, those served from prefix-shared cache pages
  int completion_tokens = 0;
  int reasoning_tokens = 0;      // of completion_tokens, those spent thinking (chat_plan.h: reasoning_tokens_of)
  // OpenAI's choices[].logprobs.content entries, one per token (null when
  // not asked for); ProtocolHandler makes them (it has the tokenizer).
  nlohmann::ordered_json logprobs_content = nullptr;
};

}  // namespace astrai
