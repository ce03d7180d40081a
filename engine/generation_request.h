// What a caller asks of the engine, and what it gets back: text and callbacks
// on top of the scheduler's token-level request (engine/scheduler/token_request.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/scheduler/finish_reason.h"
#include "engine/scheduler/token_request.h"
#include "reference/sampling/sampling_params.h"

namespace astrai {

struct TaskOutput;

// One generated token, as a stream sees it.
struct TokenEvent {
  int task_id = 0;
  int token = 0;
  std::string_view text;  // newly showable text (may be empty: held back or a control token)
};

struct GenerationRequest {
  std::string prompt;                       // tokenized with BOS first...
  std::optional<std::vector<int>> prompt_ids;  // ...unless the ids are given
  int max_tokens = 256;                     // new tokens at most
  SamplingParams sampling;                  // temperature 0 = greedy
  std::vector<std::string> stop;            // stop sequences (not included in the text)
  bool ignore_eos = false;                  // keep going past EOS (benchmarks)
  // Called on the scheduler thread for every generated token: keep it short
  // (hand the text to another thread); it must not call back into the engine.
  // A final call with token -1 carries text held back until the end. If it
  // throws, it is not called again and the request ends with
  // FinishReason::Error naming the exception; other requests go on.
  std::function<void(const TokenEvent&)> on_token;
  // Called on the scheduler thread once the request has ended, with its final
  // output, just before the GenerateResult completes. Same rules as on_token;
  // an exception it throws is ignored (the output is already final).
  std::function<void(const TaskOutput&)> on_finish;
};

// The scheduler's output (tokens, reason, prompt_tokens, cached_prompt_tokens,
// error) with the text the decoder made of it.
struct TaskOutput : TokenOutput {
  std::string text;           // the generated text (stop sequence excluded)
  std::string stop_sequence;  // which one, when reason == StopSequence
};

}  // namespace astrai
