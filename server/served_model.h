// The model the server serves: a ChatModel (engine, chat template, output
// families, constraint cache, sampling defaults: what a chat request is
// planned against, engine/chat_planning/chat_model.h), the name it answers
// to, and what only the server keeps beside it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/chat_planning/chat_model.h"
#include "engine/kv_cache/events/kv_events_publisher.h"
#include "engine/model_files/load_model.h"

namespace astrai {

struct ServedModel : ChatModel {
  std::string name;
  int64_t created = 0;  // Unix time it was loaded
  // The KV cache events publisher (`astrai serve --kv-events-config`), also
  // the engine's event sink; null when events are off.
  std::shared_ptr<KVEventsPublisher> kv_events;
};

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
