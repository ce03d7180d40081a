// The model the server serves: its engine, the name it answers to, and the
// chat template that turns conversations into its prompts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/inference_engine.h"
#include "engine/model_files/load_model.h"
#include "engine/tool_calls/tool_call_family.h"
#include "reference/sampling/sampling_params.h"
#include "engine/chat_planning/constraint_cache.h"
#include "engine/kv_cache/events/kv_events_publisher.h"

namespace astrai {

struct ServedModel {
  std::shared_ptr<InferenceEngine> engine;
  std::string name;
  std::unique_ptr<ChatTemplate> chat_template;
  int64_t created = 0;  // Unix time it was loaded
  // The most bytes of text one token of the tokenizer stands for (see
  // longest_token_bytes): a prompt of B bytes of text has at least
  // B / max_token_bytes tokens.
  size_t max_token_bytes = 1;
  // What a request gets for the sampling fields it leaves out: the model's
  // own defaults (sampling_defaults), overridden field by field.
  SamplingParams default_sampling{};
  // Output constraints (response_format, ...) compiled for this model's
  // vocabulary, shared by the requests that send the same spec.
  std::shared_ptr<ConstraintCache> constraints = std::make_shared<ConstraintCache>();
  // How outputs are read (detected from the chat template; `astrai serve
  // --tool-call-parser` and `--reasoning-parser` override): the family whose
  // tool calls are parsed out of the text of requests with tools, and
  // whether <think>...</think> reasoning is split out of chat outputs.
  ToolCallFamily tool_call_family = ToolCallFamily::None;
  bool split_reasoning = false;
  // The KV cache events publisher (`astrai serve --kv-events-config`), also
  // the engine's event sink; null when events are off.
  std::shared_ptr<KVEventsPublisher> kv_events;

  // The prompt's token ids for a conversation (BOS first).
  std::vector<int> encode(const std::vector<ChatMessage>& messages) const;
  std::vector<int> encode(const Prompt& prompt) const;
};

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
// server's own defaults (SamplingParams{}) for the rest and for models
// without one. do_sample is ignored (vLLM ignores it too): a client asks for
// greedy decoding with temperature 0.
SamplingParams sampling_defaults(const std::optional<HfGenerationConfig>& generation);

// The chat template a model is served with. template_name: a built-in name
// (plain, llama2, chatml, llama3); "jinja", the model's own template, which
// must be there and parse; or "" / "auto": the model's own when it has one
// and this engine's Jinja subset runs it, else the built-in its metadata
// looks like (plain when none). When auto falls back, *note (if given) says
// why. Throws std::invalid_argument for an unknown name, and the Jinja
// engine's error for a "jinja" template it cannot parse.
// model_template and tokenizer: the model's own.
std::unique_ptr<ChatTemplate> choose_chat_template(const std::string& model_template, const Tokenizer& tokenizer,
                                                   const std::string& template_name, std::string* note = nullptr);
template <class Weights>
std::unique_ptr<ChatTemplate> choose_chat_template(const LoadedModelOf<Weights>& model,
                                                   const std::string& template_name, std::string* note = nullptr) {
  return choose_chat_template(model.chat_template, model.tokenizer, template_name, note);
}

// Builds an engine from a model's weights, read from their files (the
// CLI's backend choice, cli/backend.h: the CUDA backend uploads them tensor
// by tensor, the CPU reference reads them into float32).
using EngineMaker =
    std::function<std::shared_ptr<InferenceEngine>(const ModelSource&, std::shared_ptr<const Tokenizer>)>;

// The one assembly of a served model from an opened one, for the CLI and the
// server: the chat template choose_chat_template picks (first, so a bad name
// throws before any engine is built; *note as there), the engine
// `make_engine` builds from the weights' source and the tokenizer moved out
// of `model` (the source, and with it the file mapping, is dropped once the
// engine is built), and the sampling defaults of its generation_config.json
// (sampling_defaults). `model` is left moved-from.
std::shared_ptr<ServedModel> make_served_model(OpenedModel&& model, const EngineMaker& make_engine,
                                               const std::string& template_name = "auto", std::string* note = nullptr);
// The same on the CPU reference, from weights already read (moved into the
// engine, never copied).
std::shared_ptr<ServedModel> make_served_model(LoadedModel&& model, const EngineConfig& config,
                                               const std::string& template_name = "auto");

// The same for an engine built elsewhere (tests, benchmarks).
std::shared_ptr<ServedModel> make_served_model(std::shared_ptr<InferenceEngine> engine, std::string name,
                                               const std::string& template_name);
std::shared_ptr<ServedModel> make_served_model(std::shared_ptr<InferenceEngine> engine, std::string name,
                                               std::unique_ptr<ChatTemplate> chat_template);

}  // namespace astrai
