// The request fields that constrain what a chat completion may say (issue 27,
// docs/structured-outputs.md): OpenAI's response_format and vLLM's
// structured_outputs, with vLLM's older guided_* spellings. Each becomes one
// grammar::ConstraintSpec; compiling it (and a schema's own errors, a 400
// naming the keyword and its JSON pointer) is ProtocolHandler's business,
// through the served model's ConstraintCache.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/chat_planning/chat_request.h"
#include "server/protocols/validation.h"

namespace astrai {

// Reads the fields that are present into request.constraint, recording every
// bad shape in `check` (a 422 like every other bad field):
//   response_format     {"type": "text"}                      no constraint
//                       {"type": "json_object"}               any JSON object
//                       {"type": "json_schema", "json_schema": {"name": string,
//                        "schema": object, "strict": boolean, "description": string}}
//                       (strict false is enforced all the same, as vLLM does)
//   structured_outputs  {"json": object or its text} | {"regex": string} |
//                       {"choice": [string, ...]}, exactly one of them
//   guided_json         object or its text       (vLLM's older names for the same)
//   guided_regex        string
//   guided_choice       [string, ...]
// At most one of the four may constrain a request.
void read_structured_output_fields(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request);

}  // namespace astrai
