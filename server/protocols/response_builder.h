// One chat protocol's shapes (strategy pattern): how its requests read and
// how its responses, streamed or whole, and its errors are written.
// ProtocolHandler does the work the protocols share (parse, encode the prompt,
// run the engine, stream) and asks a ResponseBuilder for every byte that goes
// out, so adding a protocol is writing one builder (and registering it in
// protocols.cpp).
//
// A builder serves one request: it is made per request with the served
// model's name, and holds that response's id and creation time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat_planning/chat_error.h"
#include "engine/chat_planning/chat_request.h"
#include "server/protocols/response_store.h"

namespace astrai {

// The HTTP status of each kind of error (protocols.cpp).
int http_status(ErrorKind kind);

class FieldChecker;
class ValidationError;
struct CommonParameters;

// A status and body for an error the protocol shapes itself.
struct ErrorResponse {
  int status = 400;
  nlohmann::ordered_json body;
};

class ResponseBuilder {
 public:
  virtual ~ResponseBuilder() = default;

  // Reads the request body (a JSON object) into the common request, the
  // same steps for every protocol: a request on the model's sampling
  // defaults; the protocol's input (read_input: messages, or prompts); the
  // parameters the protocols spell alike (validation.h's CommonParameters);
  // the protocol's other fields (read_fields); every field error raised
  // together (ValidationError, a 422 naming each); then what can only be
  // refused once the fields' types are known good (check_request: tools,
  // InvalidRequestError, a 400); and last the common parameters given.
  ChatRequest prepare(const nlohmann::ordered_json& body);

  // A stream's first bytes, before any text.
  virtual std::string format_stream_start(int prompt_tokens) = 0;
  // The bytes carrying one piece of choice `index`'s text, and the logprobs
  // entries of its tokens that came since its last chunk (null when not
  // asked for; a protocol without logprobs ignores them).
  virtual std::string format_chunk(int index, std::string_view text, const nlohmann::ordered_json& logprobs_content) = 0;
  // The bytes that end one choice (its finish reason), as it ends normally;
  // "" for a protocol whose stream ending says it all.
  virtual std::string format_choice_end(const CompletionResult& choice) = 0;
  // A stream's last bytes, once every choice ended normally (in index order).
  virtual std::string format_stream_end(const std::vector<CompletionResult>& choices) = 0;
  // Streams of chat outputs that are parsed (reasoning, tool calls; see
  // choice_output.h): told before format_stream_start, so that a protocol
  // whose content comes in typed blocks opens them as the parts come.
  virtual void set_output_parsing(bool /*parsed*/) {}
  // The bytes carrying a piece of choice `index`'s reasoning ("" for a
  // protocol without reasoning output).
  virtual std::string format_reasoning_chunk(int /*index*/, std::string_view /*text*/) { return ""; }
  // A tool call of choice `index` (the `call_index`-th of that choice) as it
  // streams: its start (id and name; its arguments still ""), then each
  // piece of its arguments as the model writes it (`call.arguments` being
  // the text so far, the piece its end), then its end ("" for a protocol
  // without tools). A call read whole is a start, one piece, an end.
  virtual std::string format_tool_call_start(int /*index*/, int /*call_index*/, const ToolCall& /*call*/) { return ""; }
  virtual std::string format_tool_call_arguments(int /*index*/, int /*call_index*/, const ToolCall& /*call*/,
                                                 std::string_view /*piece*/) {
    return "";
  }
  virtual std::string format_tool_call_end(int /*index*/, int /*call_index*/, const ToolCall& /*call*/) { return ""; }
  // The prefix of this protocol's tool call ids.
  virtual std::string tool_call_id_prefix() const { return "call_"; }
  // The server's stored responses, for a protocol that continues them (the
  // Responses API's previous_response_id); set before prepare(). nullptr or
  // never set: nothing is stored.
  virtual void set_response_store(std::shared_ptr<ResponseStore> /*store*/) {}
  // The non-streamed response body (the choices in index order).
  virtual nlohmann::ordered_json format_response(const std::vector<CompletionResult>& choices) = 0;

  // An error response body, and the same error as a stream's last bytes (for
  // a request that fails after its stream began).
  virtual nlohmann::ordered_json format_error(ErrorKind kind, const std::string& message) const = 0;
  virtual std::string format_stream_error(ErrorKind kind, const std::string& message) = 0;
  // How malformed fields are answered: nullopt gives the 422 pydantic body
  // (vLLM's shape, validation.h) that the chat protocols send; a protocol
  // whose clients expect another shape returns it.
  virtual std::optional<ErrorResponse> format_validation_error(const ValidationError& /*error*/) const {
    return std::nullopt;
  }

 protected:
  // defaults: the sampling a request gets for the fields it leaves out.
  explicit ResponseBuilder(SamplingParams defaults) : default_sampling_(defaults) {}

  // prepare()'s steps of each protocol (see there). read_fields may change
  // the common parameters (a newer name of one that wins over it).
  virtual void read_input(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request) = 0;
  virtual void read_fields(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request,
                           CommonParameters& common) = 0;
  virtual void check_request(const nlohmann::ordered_json& /*body*/, ChatRequest& /*request*/) {}

 private:
  SamplingParams default_sampling_;
};

}  // namespace astrai
