// OpenAI's Responses API (POST /v1/responses), served statelessly: what the
// Codex CLI, the Agents SDK and client.responses.create speak. The request
// becomes the same ChatRequest as a chat completion's (template, tools,
// constraints, output parsing are the chat path's); the response is
// OpenAI's "response" object, or its event stream. See docs/server.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/protocols/response_builder.h"

namespace astrai {

class ResponsesBuilder : public ResponseBuilder {
 public:
  ResponsesBuilder(std::string model, SamplingParams defaults);

  std::string format_stream_start(int prompt_tokens) override;
  std::string format_chunk(int index, std::string_view text, const nlohmann::ordered_json& logprobs_content) override;
  std::string format_choice_end(const CompletionResult& choice) override;
  std::string format_reasoning_chunk(int index, std::string_view text) override;
  std::string format_tool_call_start(int index, int call_index, const ToolCall& call) override;
  std::string format_tool_call_arguments(int index, int call_index, const ToolCall& call, std::string_view piece) override;
  std::string tool_call_id_prefix() const override { return "call_"; }
  void set_response_store(std::shared_ptr<ResponseStore> store) override { store_ = std::move(store); }
  std::string format_stream_end(const std::vector<CompletionResult>& choices) override;
  nlohmann::ordered_json format_response(const std::vector<CompletionResult>& choices) override;
  nlohmann::ordered_json format_error(ErrorKind kind, const std::string& message) const override;
  std::string format_stream_error(ErrorKind kind, const std::string& message) override;
  std::optional<ErrorResponse> format_validation_error(const ValidationError& error) const override;

 private:
  void read_input(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request) override;
  void read_fields(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request,
                   CommonParameters& common) override;
  void check_request(const nlohmann::ordered_json& body, ChatRequest& request) override;

  // The response object around `output` (status, usage and the request's
  // settings echoed as OpenAI echoes them).
  nlohmann::ordered_json response_object(const std::string& status, nlohmann::ordered_json output,
                                         const std::vector<CompletionResult>* choices) const;
  // Keeps the finished response and its conversation for previous_response_id
  // (when the server stores responses and the request did not say store false).
  void keep(const nlohmann::ordered_json& response);
  // One event of the stream, its sequence number next.
  std::string event(const std::string& type, nlohmann::ordered_json payload);
  // Closes the open output item (its .done events), if any.
  std::string close_item();
  // Opens an output item of `kind` ("reasoning", "message") unless one is open
  // (calls open theirs in format_tool_call_start).
  std::string open_item(const std::string& kind);

  std::string model_, id_;
  int64_t created_ = 0;
  std::shared_ptr<ResponseStore> store_;
  bool store_requested_ = true;  // the request's store (OpenAI's default: true)
  nlohmann::ordered_json previous_response_id_ = nullptr;
  // The input items the response answers: the previous response's
  // conversation, then this request's input (a string as one user message).
  nlohmann::ordered_json conversation_ = nlohmann::ordered_json::array();
  // The request's settings the response echoes.
  nlohmann::ordered_json instructions_ = nullptr, tools_ = nlohmann::ordered_json::array(), tool_choice_ = "auto";
  nlohmann::ordered_json text_ = {{"format", {{"type", "text"}}}}, reasoning_ = {{"effort", nullptr}, {"summary", nullptr}};
  nlohmann::ordered_json metadata_ = nlohmann::ordered_json::object();
  bool parallel_tool_calls_ = true;
  std::optional<int> max_output_tokens_;
  std::optional<float> temperature_, top_p_;

  // The stream: its next sequence number, the items sent so far (their
  // final form, for response.completed), and the open one's kind and text.
  int sequence_ = 0;
  nlohmann::ordered_json streamed_ = nlohmann::ordered_json::array();
  std::string open_kind_;  // "" when none is open; "reasoning", "message", "function_call"
  ToolCall open_call_;     // the open function_call's call, its arguments so far
  std::string open_text_;
  bool incomplete_ = false;  // the choice ended at max_output_tokens (its message item is incomplete)
};

}  // namespace astrai
