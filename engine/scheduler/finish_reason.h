// Why a generation ended: the scheduler decides it from token ids and its
// limits, except StopSequence, which a request's consumer reports.
#pragma once

namespace astrai {

enum class FinishReason {
  Eos,           // the model emitted an end-of-generation token
  Length,        // max_tokens were generated
  StopSequence,  // a stop string appeared (it is not part of the text)
  ContextLimit,  // the next token would not fit the model's context
  Cancelled,     // cancel() or shutdown()
  Error,         // the request could not be served (see the output's error)
  // The output matched the request's constraint (response_format, a regex, a
  // choice) completely and nothing but end-of-sequence could follow
  // (engine/scheduler/task_constraint.h). The API reports "stop".
  ConstraintComplete,
};

// The lower-case name: "eos", "length", "stop_sequence", "context_limit", "cancelled", "error",
// "constraint_complete".
inline const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::Eos: return "eos";
    case FinishReason::Length: return "length";
    case FinishReason::StopSequence: return "stop_sequence";
    case FinishReason::ContextLimit: return "context_limit";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
    case FinishReason::ConstraintComplete: return "constraint_complete";
  }
  return "unknown";
}

}  // namespace astrai
