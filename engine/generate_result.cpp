#include "engine/generate_result.h"

namespace astrai {

TaskOutput GenerateResult::wait() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return output_.has_value(); });
  return *output_;
}

std::optional<TaskOutput> GenerateResult::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [&] { return output_.has_value(); })) return std::nullopt;
  return *output_;
}

std::optional<std::string> GenerateResult::next_piece() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !pieces_.empty() || output_.has_value(); });
  if (pieces_.empty()) return std::nullopt;
  std::string piece = std::move(pieces_.front());
  pieces_.pop_front();
  return piece;
}

bool GenerateResult::done() const {
  std::lock_guard lock(mutex_);
  return output_.has_value();
}

void GenerateResult::push_piece(std::string piece) {
  if (piece.empty()) return;
  {
    std::lock_guard lock(mutex_);
    pieces_.push_back(std::move(piece));
  }
  changed_.notify_all();
}

void GenerateResult::finish(TaskOutput output) {
  {
    std::lock_guard lock(mutex_);
    output_ = std::move(output);
  }
  changed_.notify_all();
}

}  // namespace astrai
