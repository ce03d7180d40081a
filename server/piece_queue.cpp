#include "server/piece_queue.h"

namespace astrai {

void PieceQueue::push(std::string_view text, int token, const TokenLogprobs* logprobs) {
  if (text.empty() && logprobs == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    text_ += text;
    if (logprobs != nullptr) logprobs_.emplace_back(token, *logprobs);
  }
  changed_.notify_all();
}

void PieceQueue::finish(const TaskOutput& output) {
  {
    std::lock_guard lock(mutex_);
    output_ = output;
  }
  changed_.notify_all();
}

PieceQueue::Batch PieceQueue::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return !text_.empty() || !logprobs_.empty() || output_.has_value(); });
  Batch batch;
  batch.text.swap(text_);
  batch.logprobs.swap(logprobs_);
  // The engine pushes a request's last text before finishing it, so the
  // output only goes out with (or after) all of the text.
  if (output_) batch.output = output_;
  return batch;
}

}  // namespace astrai
