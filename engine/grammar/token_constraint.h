// A per-request constraint on the next token: the state of a grammar matched
// against the tokens generated so far. Not thread-safe; one per request (fork
// for each of n choices).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <stdexcept>

namespace astrai::grammar {

// One bit per token id (bit t % 32 of word t / 32), the layout xgrammar and the
// device sampler use: (vocab_size + 31) / 32 words.
inline size_t bitmask_words(size_t vocab_size) { return (vocab_size + 31) / 32; }

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets exactly the bits of the tokens that may come next (all other bits
  // cleared); the end-of-sequence ids are allowed exactly when can_end().
  virtual void fill_next_token_mask(std::span<uint32_t> mask) = 0;
  // Advances over one generated token; returns false (state unchanged) when
  // the token is not allowed here. An end-of-sequence id is accepted when can_end().
  virtual bool accept_token(int token) = 0;
  // The text so far is a complete match (an end-of-sequence id may follow).
  virtual bool can_end() const = 0;
  // Complete, and no further token can extend it: the request is done.
  virtual bool is_terminated() const = 0;
  // An independent copy of this state (n > 1 choices fork after the prompt).
  virtual std::unique_ptr<TokenConstraint> fork() const = 0;
};

// How a tool-call family writes its calls, around the names and arguments
// the grammar fills in (tool_call_grammar.h): list_open, then the calls
// joined by separator, each call_open + "\"NAME\"" + before_arguments + ARGS +
// call_close; then list_close. Each family's row spells it
// (engine/chat_planning/tool_call_formats.cpp); the grammar knows no family.
struct ToolCallSyntax {
  std::string list_open, call_open, before_arguments, call_close, separator, list_close;
  // tool_choice "auto" (a lazy grammar): where free text gives way to calls.
  // Set (hermes: "<tool_call>", the start of call_open): any text without it,
  // or such text and then the calls from it on. Empty: the output is calls
  // when its first non-space byte opens them, else all text.
  std::string lazy_opener;
  // The tool's name as it is (harmony: "to=functions.get_weather"), not as a
  // JSON string ("\"get_weather\"").
  bool bare_name = false;
};

// The marks around a reasoning model's thinking (its row:
// engine/chat_planning/reasoning_split.h).
struct ReasoningMarkers {
  std::string open, close;
  // Text the answer opens with after the thinking (or in its place), right
  // after close, no whitespace between: gpt-oss's "<|channel|>final<|message|>"
  // before constrained text. Empty: whitespace, then the answer (<think> models).
  std::string answer_open;
};

// What a request asks for (OpenAI response_format / vLLM's structured_outputs),
// or the tool calls that tool_choice "required" / a named tool demands
// (ToolCalls: tool_call_grammar.h).
struct ConstraintSpec {
  enum class Kind { JsonSchema, JsonObject, Regex, Choice, ToolCalls };
  Kind kind = Kind::JsonObject;
  std::string text;                  // the schema's JSON text, or the regex; ToolCalls: [{"name", "parameters"}]
  std::vector<std::string> choices;  // Kind::Choice
  ToolCallSyntax tool_syntax = {};   // ToolCalls: how the model's family writes calls
  bool single_call = false;          // ToolCalls: exactly one call (parallel_tool_calls false)
  // ToolCalls for tool_choice "auto": the output is free text, or the calls
  // once the family's opener starts one (tool_call_grammar.h).
  bool lazy = false;
  // Where the grammar starts, for reasoning models (reasoning_grammar.h):
  //   Output                  the output's first byte;
  //   AfterReasoning          the prompt left the thinking open: any text up to
  //                           the first reasoning.close, whitespace, then the grammar;
  //   AfterOptionalReasoning  the same behind the output's own reasoning.open
  //                           (Qwen 3), or the grammar from the first byte.
  enum class Start { Output, AfterReasoning, AfterOptionalReasoning };
  Start start = Start::Output;
  ReasoningMarkers reasoning = {};  // Start other than Output: "<think>", "</think>" (the model's row)
};

// A bad schema/regex: a 400 for the API, naming the keyword and its JSON pointer.
struct ConstraintError : std::invalid_argument {
  ConstraintError(std::string keyword, std::string pointer, const std::string& message)
      : std::invalid_argument(message), keyword(std::move(keyword)), pointer(std::move(pointer)) {}
  std::string keyword;  // e.g. "not", "$ref", "type" ("" for a regex)
  std::string pointer;  // e.g. "/properties/a/not"
};

// Compiled once per (spec, vocabulary), shared by every request that uses it; immutable, thread-safe.
class CompiledConstraint {
 public:
  virtual ~CompiledConstraint() = default;
  virtual std::unique_ptr<TokenConstraint> start() const = 0;
};

}  // namespace astrai::grammar
