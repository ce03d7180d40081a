// Anthropic's Messages API (POST /v1/messages).
#pragma once

#include <cstdint>
#include <string>

#include "server/protocols/response_builder.h"

namespace astrai {

class AnthropicResponseBuilder : public ResponseBuilder {
 public:
  // defaults: the sampling a request gets for the fields it leaves out.
  AnthropicResponseBuilder(std::string model, SamplingParams defaults);

  std::string format_stream_start(int prompt_tokens) override;
  std::string format_chunk(int index, std::string_view text, const nlohmann::ordered_json& logprobs_content) override;
  std::string format_choice_end(const CompletionResult& choice) override;
  void set_output_parsing(bool parsed) override { lazy_blocks_ = parsed; }
  std::string format_reasoning_chunk(int index, std::string_view text) override;
  std::string format_tool_call_start(int index, int call_index, const ToolCall& call) override;
  std::string format_tool_call_arguments(int index, int call_index, const ToolCall& call, std::string_view piece) override;
  std::string tool_call_id_prefix() const override { return "toolu_"; }
  std::string format_stream_end(const std::vector<CompletionResult>& choices) override;
  nlohmann::ordered_json format_response(const std::vector<CompletionResult>& choices) override;
  nlohmann::ordered_json format_error(ErrorKind kind, const std::string& message) const override;
  std::string format_stream_error(ErrorKind kind, const std::string& message) override;

 private:
  void read_input(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request) override;
  void read_fields(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request,
                   CommonParameters& common) override;
  void check_request(const nlohmann::ordered_json& body, ChatRequest& request) override;

  std::string model_;
  std::string id_;
  // Streams: the content blocks. Without output parsing a text block opens
  // with the stream (index 0); with it, each block opens when its first part
  // comes (thinking, text, one per tool_use), closing the one before.
  bool lazy_blocks_ = false;
  int block_index_ = -1;    // the open block's index (-1: none yet)
  std::string block_type_;  // its type ("" when none is open)
  // Closes the open block and opens one of `content_block` (its type) unless
  // one of that type is open and may go on (never for tool_use).
  std::string open_block(const nlohmann::ordered_json& content_block);
  std::string close_block();
};

}  // namespace astrai
