// What planning a chat request needs of the model it runs on: the engine, the
// chat template, how the model writes tool calls and reasoning, the compiled
// output constraints it shares between requests, and the sampling defaults a
// request starts from. The server's ServedModel is one of these with its
// name and what only the server needs (server/served_model.h).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/chat_planning/constraint_cache.h"
#include "engine/chat_planning/tool_call_formats.h"
#include "engine/inference_engine.h"
#include "engine/model_files/hf/hf_config.h"
#include "reference/sampling/sampling_params.h"

namespace astrai {

class Tokenizer;

struct ChatModel {
  std::shared_ptr<InferenceEngine> engine;
  std::unique_ptr<ChatTemplate> chat_template;
  // The most bytes of text one token of the tokenizer stands for (see
  // longest_token_bytes): a prompt of B bytes of text has at least
  // B / max_token_bytes tokens.
  size_t max_token_bytes = 1;
  // What a request gets for the sampling fields it leaves out: the model's
  // own defaults (sampling_defaults), overridden field by field.
  SamplingParams default_sampling{};
  // The max_tokens of a request that sets none: generation_config.json's
  // max_new_tokens, as vLLM applies it (at most what the context leaves);
  // nullopt: what the context leaves (OpenAI's and vLLM's default).
  std::optional<int> default_max_tokens;
  // Output constraints (response_format, tool grammars, ...) compiled for
  // this model's vocabulary, shared by the requests that send the same spec.
  std::shared_ptr<ConstraintCache> constraints = std::make_shared<ConstraintCache>();
  // How outputs are read (detected from the chat template; `astrai serve
  // --tool-call-parser` and `--reasoning-parser` override): the family whose
  // tool calls are parsed out of the text of requests with tools, and
  // whether reasoning is split out of chat outputs (reasoning_split.h).
  ToolCallFamily tool_call_family = ToolCallFamily::None;
  bool split_reasoning = false;
  // gpt-oss: outputs are harmony messages, read for the reasoning and the
  // calls by harmony_output.h (instead of split_reasoning's <think> rule).
  bool harmony = false;

  // The prompt's token ids for a conversation (BOS first).
  std::vector<int> encode(const std::vector<ChatMessage>& messages) const;
  std::vector<int> encode(const Prompt& prompt) const;
};

// A model for chats on `engine` with `chat_template`: the output families
// its template's markers say, and its tokenizer's max_token_bytes.
ChatModel make_chat_model(std::shared_ptr<InferenceEngine> engine, std::unique_ptr<ChatTemplate> chat_template);

// The most input bytes one token of `tokenizer` can stand for when text is
// encoded, at least 1: the longest normal, user-defined or control piece
// (pieces hold their bytes, spaces as spaces). Every token encode() or
// encode_with_special_tokens makes of text is such a piece, a <0xXX> byte
// piece (one byte), or the unknown piece standing for one byte (no byte
// pieces). The pieces' bytes concatenate to the text (SentencePiece puts a
// dummy space in front), so no token stands for more. Three times that when
// a byte-level tokenizer normalizes to NFC, which shrinks text at most
// threefold before it is encoded.
size_t longest_token_bytes(const Tokenizer& tokenizer);

// The sampling defaults a model is served with, as vLLM applies
// generation_config.json: its temperature, top_p and top_k where set, the
// engine's own defaults (SamplingParams{}) for the rest and for models
// without one. do_sample is ignored (vLLM ignores it too): a client asks for
// greedy decoding with temperature 0.
SamplingParams sampling_defaults(const std::optional<HfGenerationConfig>& generation);

// The chat template a model is served with. template_name: a built-in name
// (plain, llama2, chatml, llama3); "jinja", the model's own template, which
// must be there and parse; a path to a Jinja file (vLLM's --chat-template
// PATH); or "" / "auto": the model's own when it has one and this engine's
// Jinja subset runs it, else the built-in its metadata looks like (plain
// when none). When auto falls back, *note (if given) says why. Throws
// std::invalid_argument for an unknown name, and the Jinja engine's error for
// a "jinja" template it cannot parse. model_template and tokenizer: the
// model's own.
std::unique_ptr<ChatTemplate> choose_chat_template(const std::string& model_template, const Tokenizer& tokenizer,
                                                   const std::string& template_name, std::string* note = nullptr);

}  // namespace astrai
