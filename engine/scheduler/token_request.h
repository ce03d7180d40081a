// What the scheduler serves: token ids in, token ids and a finish reason out.
// Text (detokenization, UTF-8, stop strings) is its consumer's business: the
// engine's RequestDecoder (engine/request_decoder.h) sits behind the hooks.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/request_defaults.h"
#include "engine/grammar/token_constraint.h"
#include "engine/scheduler/finish_reason.h"
#include "reference/sampling/logprobs.h"
#include "reference/sampling/sampling_params.h"

namespace astrai {

struct TokenOutput;

struct TokenRequest {
  // Chosen by the caller (the engine numbers its requests), so that its
  // handle knows the id before any hook runs; unique among unfinished tasks.
  int task_id = 0;
  std::vector<int> prompt;       // ids; never empty, each inside the vocabulary
  int max_tokens = kDefaultMaxTokens;  // new tokens at most
  SamplingParams sampling;       // temperature 0 = greedy
  std::vector<int> stop_tokens;  // end the request with FinishReason::Eos (EOS, end-of-turn, stop_token_ids...)
  // -1: none; n in [0, kMaxTopLogprobs]: each token's log-probability and the
  // n most likely tokens (reference/sampling/logprobs.h), in TokenOutput::logprobs
  // and handed to on_token.
  int logprobs = -1;
  // The request's constraint on what it may generate (a grammar's state at the
  // start of the output; engine/scheduler/task_constraint.h says how it is
  // applied and what ends the request); null: none. For n choices, each
  // choice has its own (a fork() of one state).
  std::unique_ptr<grammar::TokenConstraint> constraint;
  // Speculation (SchedulerConfig::speculation): -1 follows the scheduler's
  // setting; 0 opts this request out; n > 0 proposes at most n tokens per
  // step (never more than the scheduler's num_tokens). The tokens are the
  // same either way.
  int max_proposed = -1;
  // Both hooks run on the scheduler thread. on_token sees every generated
  // token (with its log-probabilities when asked for, else nullptr) and returns true to end the request now with
  // FinishReason::StopSequence. If it throws, the request ends with
  // FinishReason::Error naming the exception; other requests go on.
  std::function<bool(int token, const TokenLogprobs* logprobs)> on_token;
  // Called once when the request has ended; an exception it throws is ignored.
  std::function<void(const TokenOutput&)> on_finish;
};

struct TokenOutput {
  int task_id = 0;
  std::vector<int> tokens;       // generated ids (a final stop token included)
  FinishReason reason = FinishReason::Error;
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;  // prompt tokens whose prefill a prefix-cache hit saved
  std::string error;             // when reason == Error
  std::vector<TokenLogprobs> logprobs = {};  // one per token, when the request asked (logprobs >= 0)
};

// The error of a request whose `callback` threw `thrown`:
// "the on_token callback threw: <what>".
inline std::string callback_error(const std::string& callback, const std::exception_ptr& thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    return "the " + callback + " callback threw: " + e.what();
  } catch (...) {
    return "the " + callback + " callback threw a non-standard exception";
  }
}

}  // namespace astrai
