// What a request gets for a length it leaves out: each default in one place.
// (The sampling defaults are SamplingParams' own initialisers,
// reference/sampling/sampling_params.h, which a served model's
// generation_config.json overrides field by field: sampling_defaults in
// engine/chat_planning/chat_model.h. `astrai generate` prints those values
// as its options' defaults.)
#pragma once

namespace astrai {

// New tokens at most, for the engine's own API (GenerationRequest,
// GenerateParams, the scheduler's TokenRequest) and `astrai generate`.
inline constexpr int kDefaultMaxTokens = 256;

// OpenAI's /v1/completions when max_tokens is omitted: 16, as OpenAI and
// vLLM do.
inline constexpr int kCompletionsDefaultMaxTokens = 16;

// The chat APIs when max_tokens is omitted (OpenAI's; Anthropic's requires
// it): what the context leaves. The engine ends a request when the context
// is full (FinishReason::ContextLimit), which for a prompt of P tokens is
// after context - P + 1 tokens (engine/scheduler/prompt_limit.h), so this
// bound never ends a request before the context does.
inline int max_tokens_the_context_leaves(int context, int prompt_tokens) { return context - prompt_tokens + 1; }

}  // namespace astrai
