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
  // The most bytes of text one token of the tokenizer stands for (see
  // longest_token_bytes): a prompt of B bytes of text has at least
  // B / max_token_bytes tokens.
  size_t max_token_bytes = 1;

  // The prompt's token ids for a conversation (BOS first).
  std::vector<int> encode(const std::vector<ChatMessage>& messages) const;
  std::vector<int> encode(const Prompt& prompt) const;
};

// The most input bytes one token of `tokenizer` can stand for when text is
// encoded, at least 1. SentencePiece: the longest normal or user-defined
// piece (pieces hold their bytes, spaces as spaces). Every token encode()
// makes of text is such a piece, a <0xXX> byte piece (one byte), or the
// unknown piece standing for one byte (no byte pieces); never a control
// piece. The pieces' bytes concatenate to the text (with the dummy space in
// front), so no token stands for more. Byte-level BPE: the longest piece of
// any kind (text that spells a control token becomes it), three times that
// when the tokenizer normalizes to NFC (which shrinks text at most threefold).
size_t longest_token_bytes(const Tokenizer& tokenizer);

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
