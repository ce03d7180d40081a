// OpenAI's Chat Completions API (POST /v1/chat/completions).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/protocols/response_builder.h"

namespace astrai {

// OpenAI's error body {"error": {message, type, param, code}} (also /v1/completions').
nlohmann::ordered_json openai_error_body(ErrorKind kind, const std::string& message);
// OpenAI's usage.prompt_tokens_details: the prompt tokens served from
// prefix-shared cache pages (cached_tokens).
nlohmann::ordered_json openai_prompt_details(int64_t cached_tokens);

// A choice's message: role, content, reasoning and tool calls as OpenAI shapes them.
nlohmann::ordered_json openai_message(const CompletionResult& result);

class OpenAIResponseBuilder : public ResponseBuilder {
 public:
  // defaults: the sampling a request gets for the fields it leaves out.
  OpenAIResponseBuilder(std::string model, SamplingParams defaults);

  std::string format_stream_start(int prompt_tokens) override;
  std::string format_chunk(int index, std::string_view text, const nlohmann::ordered_json& logprobs_content) override;
  std::string format_choice_end(const CompletionResult& choice) override;
  std::string format_stream_end(const std::vector<CompletionResult>& choices) override;
  std::string format_reasoning_chunk(int index, std::string_view text) override;
  std::string format_tool_call_start(int index, int call_index, const ToolCall& call) override;
  std::string format_tool_call_arguments(int index, int call_index, const ToolCall& call, std::string_view piece) override;
  nlohmann::ordered_json format_response(const std::vector<CompletionResult>& choices) override;
  nlohmann::ordered_json format_error(ErrorKind kind, const std::string& message) const override;
  std::string format_stream_error(ErrorKind kind, const std::string& message) override;

 private:
  void read_input(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request) override;
  void read_fields(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request,
                   CommonParameters& common) override;
  void check_request(const nlohmann::ordered_json& body, ChatRequest& request) override;
  // A chat.completion.chunk with one choice, `index`, carrying `delta`.
  nlohmann::ordered_json chunk(int index, nlohmann::ordered_json delta, const nlohmann::ordered_json& finish_reason) const;

  std::string model_;
  std::string id_;
  int64_t created_;
  // stream_options.include_usage: true puts "usage": null in every chunk as
  // OpenAI does; false (explicitly) leaves out the final usage chunk.
  std::optional<bool> include_usage_;
  int n_ = 1;  // the request's choices: a stream opens each with its role chunk
};

}  // namespace astrai
