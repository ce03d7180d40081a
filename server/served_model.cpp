#include "server/served_model.h"

#include <algorithm>

#include "engine/chat/prompt_encoder.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "server/request_id.h"

namespace astrai {

std::vector<int> ServedModel::encode(const std::vector<ChatMessage>& messages) const {
  return encode(chat_template->render(messages));
}

std::vector<int> ServedModel::encode(const Prompt& prompt) const { return encode_prompt(prompt, engine->tokenizer()); }

size_t longest_token_bytes(const Tokenizer& tokenizer) {
  const bool byte_level = tokenizer.kind() == TokenizerKind::ByteLevelBpe;
  size_t longest = 1;
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    const TokenType type = tokenizer.type(id);
    // A byte-level BPE also makes control tokens of text that spells them.
    if (type == TokenType::Normal || type == TokenType::UserDefined || (byte_level && type == TokenType::Control))
      longest = std::max(longest, tokenizer.piece(id).size());
  }
  // NFC shrinks text at most threefold (Hangul L+V+T jamo, 9 bytes, compose
  // into one 3-byte syllable; a base with its two composable marks takes at
  // least 5 bytes for at most 3), and the bytes counted are the text's before
  // normalization.
  if (byte_level && tokenizer.byte_level_bpe()->normalizes_nfc()) longest *= 3;
  return longest;
}

std::shared_ptr<ServedModel> make_served_model(std::shared_ptr<InferenceEngine> engine, std::string name,
                                               const std::string& template_name) {
  auto served = std::make_shared<ServedModel>();
  served->engine = std::move(engine);
  served->name = std::move(name);
  served->chat_template = make_chat_template(template_name);
  served->created = unix_time_now();
  served->max_token_bytes = longest_token_bytes(served->engine->tokenizer());
  return served;
}

std::shared_ptr<ServedModel> make_served_model(LoadedModel model, const EngineConfig& config,
                                               const std::string& template_name) {
  const std::string chosen =
      (template_name.empty() || template_name == "auto") ? detect_chat_template(model.chat_template) : template_name;
  make_chat_template(chosen);  // throws for an unknown name before the engine is built
  auto weights = std::make_shared<const ModelWeights>(std::move(model.weights));
  auto tokenizer = std::make_shared<const Tokenizer>(std::move(model.tokenizer));
  auto engine = std::make_shared<InferenceEngine>(std::move(weights), std::move(tokenizer), config);
  return make_served_model(std::move(engine), model.name, chosen);
}

}  // namespace astrai
