#include "engine/request_decoder.h"

#include <algorithm>

namespace astrai {

RequestDecoder::RequestDecoder(int task_id, std::shared_ptr<const Tokenizer> tokenizer, std::span<const int> prompt,
                               std::vector<int> stop_tokens, GenerationRequest request, int index)
    : task_id_(task_id),
      index_(index),
      tokenizer_(std::move(tokenizer)),
      previous_token_(prompt.empty() ? -1 : prompt.back()),  // an empty prompt is refused before any token
      stop_tokens_(std::move(stop_tokens)),
      text_(std::move(request.stop)),
      on_token_(std::move(request.on_token)),
      on_finish_(std::move(request.on_finish)),
      result_(std::make_shared<GenerateResult>(task_id)) {}

bool RequestDecoder::on_token(int token, const TokenLogprobs* logprobs) {
  // A stop token is listed in the ids but is never text: EOS decodes to ""
  // anyway, but a user-defined <|im_end|> would otherwise show its spelling.
  const bool stop_token = std::find(stop_tokens_.begin(), stop_tokens_.end(), token) != stop_tokens_.end();
  const std::string piece = stop_token ? std::string() : text_.push(tokenizer_->decode_token(previous_token_, token));
  previous_token_ = token;
  const std::exception_ptr thrown = notify(TokenEvent{task_id_, token, piece, logprobs, index_});
  result_->push_piece(piece);
  if (thrown) std::rethrow_exception(thrown);
  return text_.stopped();
}

void RequestDecoder::on_finish(const TokenOutput& output) {
  TaskOutput out{output, "", "", index_};
  const std::string tail = text_.finish();
  if (!tail.empty()) {
    const std::exception_ptr thrown = notify(TokenEvent{task_id_, -1, tail, nullptr, index_});
    result_->push_piece(tail);
    // The caller missed the end of its text: the request failed, unless it had failed already.
    if (thrown && out.reason != FinishReason::Error) {
      out.reason = FinishReason::Error;
      out.error = callback_error("on_token", thrown);
    }
  }
  out.text = text_.text();
  out.stop_sequence = text_.matched_stop();
  if (on_finish_) {
    // Nothing is left to report a failure to (the output is final), but the
    // result must still complete.
    try {
      on_finish_(out);
    } catch (...) {
    }
  }
  result_->finish(std::move(out));
}

// Calls the caller's on_token, once more only if it never threw.
std::exception_ptr RequestDecoder::notify(const TokenEvent& event) {
  if (!on_token_) return nullptr;
  try {
    on_token_(event);
  } catch (...) {
    on_token_ = nullptr;
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace astrai
