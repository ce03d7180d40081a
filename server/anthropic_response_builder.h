// Anthropic's Messages API (POST /v1/messages).
#pragma once

#include <cstdint>
#include <string>

#include "server/response_builder.h"

namespace astrai {

class AnthropicResponseBuilder : public ResponseBuilder {
 public:
  // defaults: the sampling a request gets for the fields it leaves out.
  AnthropicResponseBuilder(std::string model, SamplingParams defaults);

  ChatRequest prepare(const nlohmann::ordered_json& body) override;
  std::string format_stream_start(int prompt_tokens) override;
  std::string format_chunk(int index, std::string_view text, const nlohmann::ordered_json& logprobs_content) override;
  std::string format_choice_end(const CompletionResult& choice) override;
  std::string format_stream_end(const std::vector<CompletionResult>& choices) override;
  nlohmann::ordered_json format_response(const std::vector<CompletionResult>& choices) override;
  nlohmann::ordered_json format_error(ErrorKind kind, const std::string& message) const override;
  std::string format_stream_error(ErrorKind kind, const std::string& message) override;

 private:
  std::string model_;
  SamplingParams default_sampling_;
  std::string id_;
};

}  // namespace astrai
