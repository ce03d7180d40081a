// The model the server serves: its engine, the name it answers to, and the
// chat template that turns conversations into its prompts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/inference_engine.h"
#include "engine/model_files/load_model.h"

namespace astrai {

struct ServedModel {
  std::shared_ptr<InferenceEngine> engine;
  std::string name;
  std::unique_ptr<ChatTemplate> chat_template;
  int64_t created = 0;  // Unix time it was loaded

  // The prompt's token ids for a conversation (BOS first).
  std::vector<int> encode(const std::vector<ChatMessage>& messages) const;
};

// Builds the engine (CPU reference) for a loaded model. template_name names a
// chat template, or is "" / "auto" to take the one the model's metadata
// names (plain when it names none); throws std::invalid_argument for an
// unknown name.
std::shared_ptr<ServedModel> make_served_model(LoadedModel model, const EngineConfig& config,
                                               const std::string& template_name = "auto");

// The same for an engine built elsewhere (tests, benchmarks).
std::shared_ptr<ServedModel> make_served_model(std::shared_ptr<InferenceEngine> engine, std::string name,
                                               const std::string& template_name);

}  // namespace astrai
