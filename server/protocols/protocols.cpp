#include "server/protocols/protocols.h"

#include "server/protocols/anthropic_response_builder.h"
#include "server/protocols/completions_response_builder.h"
#include "server/protocols/openai_response_builder.h"
#include "server/protocols/responses_builder.h"

namespace astrai {

int http_status(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::InvalidRequest:
    case ErrorKind::ContextLength: return 400;
    case ErrorKind::Authentication: return 401;
    case ErrorKind::Overloaded:
    case ErrorKind::Unavailable: return 503;
    case ErrorKind::Internal: return 500;
  }
  return 500;
}

const std::vector<Protocol>& protocols() {
  static const std::vector<Protocol> all = {
      {"openai", "/v1/chat/completions",
       [](const std::string& model, const SamplingParams& defaults) {
         return std::make_unique<OpenAIResponseBuilder>(model, defaults);
       }},
      {"anthropic", "/v1/messages",
       [](const std::string& model, const SamplingParams& defaults) {
         return std::make_unique<AnthropicResponseBuilder>(model, defaults);
       }},
      {"completions", "/v1/completions",
       [](const std::string& model, const SamplingParams& defaults) {
         return std::make_unique<CompletionsResponseBuilder>(model, defaults);
       }},
      {"responses", "/v1/responses",
       [](const std::string& model, const SamplingParams& defaults) {
         return std::make_unique<ResponsesBuilder>(model, defaults);
       }},
  };
  return all;
}

const Protocol& protocol_for_errors(const std::string& path, bool has_anthropic_version_header) {
  const Protocol* anthropic = nullptr;
  for (const Protocol& p : protocols()) {
    if (p.path == path) return p;
    if (p.name == "anthropic") anthropic = &p;
  }
  if (has_anthropic_version_header && anthropic) return *anthropic;
  return protocols().front();
}

}  // namespace astrai
