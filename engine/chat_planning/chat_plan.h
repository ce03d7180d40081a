// How a chat request becomes a generation, whatever protocol it came in: the
// one place where a protocol-neutral ChatRequest (chat_request.h) meets the
// model (chat_model.h). A protocol only reads its JSON into the request and
// writes the plan's results back (server/protocols/); the server's handler
// only moves bytes (server/protocol_handler.h).
//
//   plan_chat      request -> plan: the prompt rendered by the chat template
//                  and encoded (or each raw prompt of /v1/completions), the
//                  tools' grammar or the response format compiled (after
//                  the thinking for a reasoning model), the engine requests
//                  with their max_tokens, and how each output is read
//                  (reasoning split, tool calls: output_parsing).
//   submit_plan    the plan's requests to the engine, every choice numbered
//                  in the whole response.
//   choice_result  a choice's output as the protocols write it: its text
//                  (after its prompt's echo), the reasoning and tool calls
//                  parsed out, ids by the model's family.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/chat_planning/chat_error.h"
#include "engine/chat_planning/chat_model.h"
#include "engine/chat_planning/chat_request.h"
#include "engine/chat_planning/choice_output.h"
#include "engine/choices_result.h"
#include "engine/generation_request.h"

namespace astrai {

struct ChatPlan {
  // One per prompt (chat: one), each for n choices; choice c of prompt p is
  // choice p * n + c of the response. Callbacks unset (submit_plan's).
  std::vector<GenerationRequest> requests;
  int n = 1;
  std::vector<std::string> echoes;      // completions with echo: each prompt's text (else empty)
  std::vector<int> last_prompt_tokens;  // per choice: the prompt token its logprobs entries follow
  int prompt_tokens = 0;                // the first prompt's tokens (what a stream's start announces)
  OutputParsing parsing;                // chat outputs: reasoning and tool calls (completions: none)
  // A thinking model whose prompt leaves the thinking to the output (<think>,
  // or gpt-oss's analysis message): the vocabulary its reasoning tokens are
  // counted with (reasoning_tokens_of), the markers that open and close the
  // thinking, and the thinking budget its requests' constraint enforces, if any.
  std::optional<grammar::TokenVocabulary> thinking_vocabulary;
  grammar::ReasoningMarkers thinking_markers;
  std::optional<int> thinking_budget;

  // Choices in the whole response (the requests' n summed; still known
  // once submit_plan has moved the requests out).
  size_t choices() const { return last_prompt_tokens.size(); }
};

// The prompt a chat request's messages make with the model's template, its
// tools and template variables (chat_template_kwargs): what `astrai
// chat-template --api` prints. Throws ChatError (InvalidRequest) when the
// template refuses the conversation.
Prompt render_chat(const ChatRequest& request, const ChatTemplate& chat_template);

// Throws ChatError: InvalidRequest for tool_choice required or named beside
// an output constraint, a conversation the template refuses, or a schema,
// regex or tool list the grammar refuses (naming the keyword and where);
// ContextLength for a prompt longer than the context (from its bytes alone
// when that is certain, before tokenizing).
ChatPlan plan_chat(ChatRequest request, const ChatModel& model);

// Where a plan's choices report: each token event and each choice's end,
// with choice numbers of the whole response (TokenEvent::index and
// TaskOutput::index renumbered).
struct ChoiceEvents {
  std::function<void(const TokenEvent&)> on_token;
  std::function<void(const TaskOutput&)> on_finish;
};
// Sets the plan's requests' callbacks to report to `events`.
void route_choice_events(ChatPlan& plan, const ChoiceEvents& events);

// Submits every request of the plan (moved out of it) and returns the
// choices in response order. Throws what InferenceEngine::generate_choices
// throws (QueueFullError, std::invalid_argument, std::runtime_error), having
// cancelled the prompts it had already submitted.
ChoicesResult submit_plan(InferenceEngine& engine, ChatPlan& plan);

// An output's fields as the protocols write them (index, text, finish,
// usage), nothing parsed out.
CompletionResult completion_of(const TaskOutput& output);

// Choice `choice`'s whole result: the engine's output with its index, its
// prompt's echo first, and the parts parsed out as the plan says; tool call
// ids by the model's family, else `id_prefix` (the protocol's).
CompletionResult choice_result(const ChatPlan& plan, const TaskOutput& output, int choice, std::string_view id_prefix);

// The tokens a choice spent thinking (usage's reasoning_tokens): those up
// to and including the close marker's last, all of them when the thinking
// never closed, 0 for an output that did not think (reasoning_split.h's
// rule, over the tokens' bytes, with the plan's thinking_markers: gpt-oss's
// first analysis message, through the "<|end|><|start|>assistant" after it).
int reasoning_tokens_of(const ChatPlan& plan, const TaskOutput& output);

// A call parsed out of a streamed output, with its id (as choice_result).
ToolCall tool_call_of(const OutputParsing& parsing, ParsedToolCall parsed, std::string_view id_prefix);

// A choice that ended without a normal finish (cancelled, failed), as an
// error to report; nullopt for a normal finish.
std::optional<ChatError> failure_of(const TaskOutput& output);

}  // namespace astrai
