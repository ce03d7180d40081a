#include "server/served_model.h"

#include <algorithm>

#include "engine/chat/prompt_encoder.h"
#include "server/request_id.h"

namespace astrai {

std::vector<int> ServedModel::encode(const std::vector<ChatMessage>& messages) const {
  return encode(chat_template->render(messages));
}

std::vector<int> ServedModel::encode(const Prompt& prompt) const { return encode_prompt(prompt, engine->tokenizer()); }

size_t longest_token_bytes(const Tokenizer& tokenizer) {
  size_t longest = 1;
  for (int id = 0; id < tokenizer.vocab_size(); ++id)
    if (tokenizer.type(id) == TokenType::Normal || tokenizer.type(id) == TokenType::UserDefined)
      longest = std::max(longest, tokenizer.piece(id).size());
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
