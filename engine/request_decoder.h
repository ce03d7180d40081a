// The text side of one request. The scheduler deals in token ids and finish
// reasons (engine/scheduler/token_request.h); the engine puts one decoder
// behind each request's token hooks, and the decoder makes the text:
//
//   on_token(token)   the token's bytes (Tokenizer::decode_token) go through a
//                     TextStream (whole UTF-8 characters only, stop strings
//                     held back); the newly showable piece goes to the
//                     caller's on_token, then to the GenerateResult; returns
//                     whether a stop string appeared (the scheduler then ends
//                     the request with FinishReason::StopSequence).
//   on_finish(out)    the held-back tail goes out as a last piece (token -1),
//                     then the TaskOutput is built, given to the caller's
//                     on_finish, and completes the GenerateResult.
//
// Both run on the scheduler thread, one request's calls one after another.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/generate_result.h"
#include "engine/generation_request.h"
#include "engine/scheduler/token_request.h"
#include "engine/text/text_stream.h"
#include "engine/tokenizer/tokenizer.h"

namespace astrai {

class RequestDecoder {
 public:
  // Takes the request's stop strings and callbacks. stop_tokens are the ids
  // the scheduler ends the request on: they are never text. The prompt's last
  // token is the one the first generated token is decoded after. `index` is
  // the request's choice this decoder serves.
  RequestDecoder(int task_id, std::shared_ptr<const Tokenizer> tokenizer, std::span<const int> prompt,
                 std::vector<int> stop_tokens, GenerationRequest request, int index = 0);

  // The scheduler's hooks. on_token rethrows what the caller's on_token threw
  // (after the piece reached the GenerateResult), for the scheduler to end
  // the request with FinishReason::Error; that callback is not called again.
  bool on_token(int token, const TokenLogprobs* logprobs = nullptr);
  void on_finish(const TokenOutput& output);

  const std::shared_ptr<GenerateResult>& result() const { return result_; }

 private:
  std::exception_ptr notify(const TokenEvent& event);

  const int task_id_;
  const int index_;  // the choice, in every TokenEvent and the TaskOutput
  const std::shared_ptr<const Tokenizer> tokenizer_;
  int previous_token_;  // decode_token needs it: the first piece after BOS loses its leading space
  const std::vector<int> stop_tokens_;
  TextStream text_;
  std::function<void(const TokenEvent&)> on_token_;
  std::function<void(const TaskOutput&)> on_finish_;
  const std::shared_ptr<GenerateResult> result_;
};

}  // namespace astrai
