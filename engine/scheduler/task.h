// One request inside the scheduler.
//
// tokens holds the prompt followed by every generated token. The K/V of
// positions [0, n_computed) are in the cache; the next forward step for this
// task computes positions [n_computed, tokens.size()) and the logits of the
// last one. Prefill (many positions) and decode (one) are the same thing
// here, and so is recomputation after preemption: n_computed drops to 0 and
// the task goes back to the waiting queue with its generated tokens kept.
// A choice forked from another task's prompt starts with n_computed =
// prompt_len and never computes the prompt itself (unless preempted).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "engine/scheduler/task_constraint.h"
#include "engine/scheduler/token_request.h"
#include "reference/sampling/sampler.h"

namespace astrai {

struct Task {
  explicit Task(TokenRequest request)
      : id(request.task_id),
        tokens(std::move(request.prompt)),
        prompt_len(int(tokens.size())),
        max_new_tokens(request.max_tokens),
        stop_tokens(std::move(request.stop_tokens)),
        sampler(request.sampling, tokens),  // tokens is the prompt here (declared, so built, before sampler)
        logprobs(request.logprobs),
        constraint(std::move(request.constraint)),
        max_proposed(request.max_proposed),
        on_token(std::move(request.on_token)),
        on_finish(std::move(request.on_finish)) {}

  int id;
  std::vector<int> tokens;
  int prompt_len;
  int n_computed = 0;
  int cached_prompt_tokens = 0;  // prefix-cache hit at first admission
  bool admitted_once = false;
  bool finished = false;         // ended (on_finish called); leaves running_ at the next remove_finished()
  int max_new_tokens;
  std::vector<int> stop_tokens;  // EOS (and BOS for llama2.c-style models); empty with ignore_eos
  SamplerState sampler;          // this request's own RNG and token counts: batching never changes its draws
  int logprobs;                  // -1: none wanted; else how many top tokens
  std::vector<TokenLogprobs> token_logprobs;  // one per generated token, when wanted
  TaskConstraint constraint;     // its state and next-token mask; inactive (free) without one
  int max_proposed;              // speculation: -1 the scheduler's setting, 0 off, n at most n per step
  std::function<bool(int, const TokenLogprobs*)> on_token;
  std::function<void(const TokenOutput&)> on_finish;
  // The other choices of an n-choice request (InferenceScheduler::submit_choices),
  // held by its first choice until that one's prompt is computed: then each
  // forks the prompt's K/V from it (KVCache::fork) and samples its first token
  // from the same logits with its own generator.
  std::vector<std::unique_ptr<Task>> forks;

  int generated() const { return int(tokens.size()) - prompt_len; }
  int pending_positions() const { return int(tokens.size()) - n_computed; }
};

}  // namespace astrai
