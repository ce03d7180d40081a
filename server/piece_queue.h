// The text of one streamed request on its way from the scheduler thread,
// which pushes pieces from the request's on_token/on_finish callbacks, to the
// HTTP worker thread writing the stream, which waits here. Each stream waits
// on its own queue, so a slow reader holds up nobody else, and the scheduler
// thread never waits on a client.
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
  // Called on the scheduler thread; never block. A token's logprobs (when
  // the request asked) travel with the text it made, as {token, logprobs}.
  void push(std::string_view text, int token = -1, const TokenLogprobs* logprobs = nullptr);
  void finish(const TaskOutput& output);

  struct Batch {
    std::string text;                  // everything pushed since the last call (possibly "")
    std::vector<std::pair<int, TokenLogprobs>> logprobs;  // the tokens' logprobs pushed since then
    std::optional<TaskOutput> output;  // set once the request ended and all its text was taken
  };
  // Waits up to `timeout` for text or the end. A reader that fell behind
  // gets all the text waiting in one batch, so it catches up in one write.
  Batch next(std::chrono::milliseconds timeout);

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string text_;
  std::vector<std::pair<int, TokenLogprobs>> logprobs_;
  std::optional<TaskOutput> output_;
};

}  // namespace astrai
