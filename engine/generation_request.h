// What a caller asks of the engine, and what it gets back: text and callbacks
// on top of the scheduler's token-level request (engine/scheduler/token_request.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request_defaults.h"
#include "engine/grammar/token_constraint.h"
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
  // The token's log-probabilities when the request asked (logprobs >= 0);
  // nullptr otherwise and for the final held-back piece (token -1).
  const TokenLogprobs* logprobs = nullptr;
  int index = 0;  // which choice of the request (0 .. n-1)
};

struct GenerationRequest {
  std::string prompt;                       // tokenized with BOS first...
  std::optional<std::vector<int>> prompt_ids;  // ...unless the ids are given
  int max_tokens = kDefaultMaxTokens;       // new tokens at most
  SamplingParams sampling;                  // temperature 0 = greedy
  std::vector<std::string> stop;            // stop sequences (not included in the text)
  bool ignore_eos = false;                  // keep going past EOS (benchmarks)
  // More ids that end the request (FinishReason::Eos), as vLLM's
  // stop_token_ids; they apply with ignore_eos too, and are never text.
  std::vector<int> stop_token_ids;
  // -1: none; n in [0, 20]: each token's log-probability (of the model's raw
  // logits) and the n most likely tokens, in TokenEvent and TaskOutput::logprobs.
  int logprobs = -1;
  // How many choices of this prompt to generate (OpenAI's and vLLM's `n`),
  // through InferenceEngine::generate_choices. The prompt is computed once;
  // choice i samples with seed + i when sampling.seed is set (so it equals a
  // request of n = 1 with that seed), else with its own random seed. The
  // callbacks are shared: each event and output carries its choice's index.
  int n = 1;
  // What the output must match (a JSON schema, a regex, a list of choices;
  // engine/grammar/), compiled for this model's vocabulary; null: anything.
  // Each choice starts from it (choice 0's start() state, forked for the
  // others); see engine/scheduler/task_constraint.h for what ends a
  // constrained request.
  std::shared_ptr<const grammar::CompiledConstraint> constraint;
  // Speculative decoding for this request (TokenRequest::max_proposed): -1,
  // the engine's setting; 0, off; n > 0, at most n proposals per step
  // (llama.cpp's per-request speculative.n_max).
  int max_proposed = -1;
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
  int index = 0;              // which choice of the request (0 .. n-1)
};

}  // namespace astrai
