// The text of one streamed request on its way from the scheduler thread,
// which pushes pieces from the request's on_token/on_finish callbacks, to the
// HTTP worker thread writing the stream, which waits here. Each stream waits
// on its own queue, so a slow reader holds up nobody else, and the scheduler
// thread never waits on a client.
//
// A request for n choices (OpenAI's `n`) has one queue with a slot per
// choice: one worker writes the whole stream, so it waits on one condition
// variable for whichever choice moves next.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/generation_request.h"

namespace astrai {

class PieceQueue {
 public:
  explicit PieceQueue(int choices = 1) : slots_(size_t(choices)) {}

  // Called on the scheduler thread; never block. A token's logprobs (when
  // the request asked) travel with the text it made, as {token, logprobs}.
  void push(int index, std::string_view text, int token = -1, const TokenLogprobs* logprobs = nullptr);
  void finish(const TaskOutput& output);  // output.index says which choice

  // What one choice pushed since the last call.
  struct Piece {
    int index = 0;
    std::string text;                                     // possibly ""
    std::vector<std::pair<int, TokenLogprobs>> logprobs;  // the tokens' logprobs
    std::optional<TaskOutput> output;  // set once, when the choice ended and all its text was taken
  };
  struct Batch {
    std::vector<Piece> pieces;  // the choices that moved, in index order (none on a timeout)
  };
  // Waits up to `timeout` for text or an end. A reader that fell behind
  // gets all the text waiting in one batch, so it catches up in one write.
  Batch next(std::chrono::milliseconds timeout);

 private:
  struct Slot {
    std::string text;
    std::vector<std::pair<int, TokenLogprobs>> logprobs;
    std::optional<TaskOutput> output;
    bool moved() const { return !text.empty() || !logprobs.empty() || output.has_value(); }
  };
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Slot> slots_;
};

}  // namespace astrai
