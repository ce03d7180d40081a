#include "server/protocols/response_builder.h"

#include "server/protocols/validation.h"

namespace astrai {

ChatRequest ResponseBuilder::prepare(const nlohmann::ordered_json& body) {
  FieldChecker check;
  ChatRequest request;
  request.sampling = default_sampling_;
  read_input(check, body, request);
  CommonParameters common = read_common_parameters(check, body);
  read_fields(check, body, request, common);
  check.throw_if_any();
  check_request(body, request);
  apply_common_parameters(common, request);
  return request;
}

}  // namespace astrai
