// The OpenAI request fields beyond the common ones (validation.h) that steer
// sampling or ask for more output: presence_penalty, frequency_penalty,
// logit_bias, logprobs, top_logprobs, and vLLM's extensions
// repetition_penalty, min_p and stop_token_ids. Anthropic's Messages API has
// none of them.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "engine/chat_planning/chat_request.h"
#include "server/protocols/validation.h"

namespace astrai {

// Reads the fields that are present into `request` (sampling, logprobs,
// stop_token_ids), recording every bad one in `check`:
//   presence_penalty, frequency_penalty  numbers in [-2, 2]
//   repetition_penalty                   number > 0
//   min_p                                number in [0, 1]
//   logit_bias                           object {"<token id>": number in [-100, 100]}
//   logprobs                             boolean
//   top_logprobs                         integer in [0, 20], only with logprobs true
//   stop_token_ids                       list of integers >= 0
// Ids past the vocabulary are checked where the vocabulary is known
// (check_token_ids).
void read_openai_sampling_fields(FieldChecker& check, const nlohmann::ordered_json& body, ChatRequest& request);

// The fields both OpenAI endpoints (chat and completions) read alike:
//   n                            integer >= 1 (the server's --max-running bounds
//                                it when the request is submitted), into request.n
//   stream_options.include_usage boolean, returned when given
std::optional<bool> read_choices_and_stream_options(FieldChecker& check, const nlohmann::ordered_json& body,
                                                    ChatRequest& request);

// 422 entries for logit_bias, stop_token_ids and (completions) prompt ids at or past vocab_size.
void check_token_ids(FieldChecker& check, const ChatRequest& request, int vocab_size);

}  // namespace astrai
