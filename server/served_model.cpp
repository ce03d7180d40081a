#include "server/served_model.h"

#include "engine/chat_planning/request_id.h"

namespace astrai {

std::shared_ptr<ServedModel> make_served_model(std::shared_ptr<InferenceEngine> engine, std::string name,
                                               std::unique_ptr<ChatTemplate> chat_template) {
  auto served = std::make_shared<ServedModel>();
  static_cast<ChatModel&>(*served) = make_chat_model(std::move(engine), std::move(chat_template));
  served->name = std::move(name);
  served->created = unix_time_now();
  return served;
}

std::shared_ptr<ServedModel> make_served_model(std::shared_ptr<InferenceEngine> engine, std::string name,
                                               const std::string& template_name) {
  return make_served_model(std::move(engine), std::move(name), make_chat_template(template_name));
}

namespace {

template <class Weights>
std::shared_ptr<ServedModel> served_with(std::shared_ptr<InferenceEngine> engine, LoadedModelOf<Weights>& model,
                                         std::unique_ptr<ChatTemplate> chat_template) {
  auto served = make_served_model(std::move(engine), std::move(model.name), std::move(chat_template));
  served->default_sampling = sampling_defaults(model.generation);
  if (model.generation) served->default_max_tokens = model.generation->max_new_tokens;
  return served;
}

}  // namespace

std::shared_ptr<ServedModel> make_served_model(OpenedModel&& model, const EngineMaker& make_engine,
                                               const std::string& template_name, std::string* note) {
  auto chat_template = choose_chat_template(model, template_name, note);  // throws before the engine is built
  auto engine = make_engine(model.weights, std::make_shared<const Tokenizer>(std::move(model.tokenizer)));
  model.weights = ModelSource{};  // closes the files: the engine holds what it read
  return served_with(std::move(engine), model, std::move(chat_template));
}

std::shared_ptr<ServedModel> make_served_model(LoadedModel&& model, const EngineConfig& config,
                                               const std::string& template_name) {
  auto chat_template = choose_chat_template(model, template_name);  // throws before the engine is built
  auto engine = std::make_shared<InferenceEngine>(std::make_shared<const ModelWeights>(std::move(model.weights)),
                                                  std::make_shared<const Tokenizer>(std::move(model.tokenizer)), config);
  return served_with(std::move(engine), model, std::move(chat_template));
}

}  // namespace astrai
