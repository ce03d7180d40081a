// OpenAI's legacy Completions API (POST /v1/completions): prompts continued
// as they are, with no chat template, as vLLM serves it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/protocols/response_builder.h"

namespace astrai {

class CompletionsResponseBuilder : public ResponseBuilder {
 public:
  CompletionsResponseBuilder(std::string model, SamplingParams defaults);

  std::string format_stream_start(int prompt_tokens) override;
  std::string format_chunk(int index, std::string_view text, const nlohmann::ordered_json& logprobs_content) override;
  std::string format_choice_end(const CompletionResult& choice) override;
  std::string format_stream_end(const std::vector<CompletionResult>& choices) override;
  nlohmann::ordered_json format_response(const std::vector<CompletionResult>& choices) override;
  nlohmann::ordered_json format_error(ErrorKind kind, const std::string& message) const override;
  std::string format_stream_error(ErrorKind kind, const std::string& message) override;

 private:
  void read_input(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request) override;
  void read_fields(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request,
                   CommonParameters& common) override;
  void check_request(const nlohmann::ordered_json& body, ChatRequest& request) override;
  nlohmann::ordered_json chunk(int index, std::string_view text, nlohmann::ordered_json logprobs,
                               const nlohmann::ordered_json& finish_reason) const;
  // The legacy logprobs object of chat-shaped entries (logprobs_content.h),
  // text offsets counted from `offset` (bytes into the choice's text).
  static nlohmann::ordered_json legacy_logprobs(const nlohmann::ordered_json& entries, size_t offset);
  nlohmann::ordered_json usage_of(const std::vector<CompletionResult>& choices) const;

  std::string model_;
  std::string id_;
  int64_t created_;
  std::optional<bool> include_usage_;
  int n_ = 1;                        // choices per prompt
  std::vector<size_t> text_offset_;  // streams: bytes of each choice's text sent so far
};

}  // namespace astrai
