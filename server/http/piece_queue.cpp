#include "server/http/piece_queue.h"

#include <algorithm>

namespace astrai {

void PieceQueue::push(int index, std::string_view text, int token, const TokenLogprobs* logprobs) {
  if (text.empty() && logprobs == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    Slot& slot = slots_.at(size_t(index));
    slot.text += text;
    if (logprobs != nullptr) slot.logprobs.emplace_back(token, *logprobs);
  }
  changed_.notify_all();
}

void PieceQueue::finish(const TaskOutput& output) {
  {
    std::lock_guard lock(mutex_);
    slots_.at(size_t(output.index)).output = output;
  }
  changed_.notify_all();
}

PieceQueue::Batch PieceQueue::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return std::ranges::any_of(slots_, &Slot::moved); });
  Batch batch;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (!slot.moved()) continue;
    Piece piece;
    piece.index = int(i);
    piece.text.swap(slot.text);
    piece.logprobs.swap(slot.logprobs);
    // The engine pushes a choice's last text before finishing it, so the
    // output only goes out with (or after) all of its text; once.
    piece.output = std::exchange(slot.output, std::nullopt);
    batch.pieces.push_back(std::move(piece));
  }
  return batch;
}

}  // namespace astrai
