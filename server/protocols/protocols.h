// The chat protocols the server speaks: a route and a ResponseBuilder factory
// each. A new protocol is one builder file plus one line in protocols.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reference/sampling/sampling_params.h"
#include "server/protocols/response_builder.h"

namespace astrai {

struct Protocol {
  std::string name;  // "openai", "anthropic", "completions"
  std::string path;  // the POST route
  // A request's builder: the served model's name, and the sampling defaults
  // its request starts from (the fields the body sets replace them).
  std::function<std::unique_ptr<ResponseBuilder>(const std::string& model_name, const SamplingParams& defaults)>
      make_builder;
};

const std::vector<Protocol>& protocols();

// The protocol whose error shape a request to `path` gets: the one routed
// there, else Anthropic's when the request carries an anthropic-version
// header (its SDK sends one on every call), else OpenAI's.
const Protocol& protocol_for_errors(const std::string& path, bool has_anthropic_version_header);

}  // namespace astrai
