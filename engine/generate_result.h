// The caller's handle on one submitted request. Whole results wait on a
// condition variable; streams take text pieces as the request's decoder
// (engine/request_decoder.h) produces them, one signal per piece.
// Thread-safe: the scheduler thread fills it, any thread reads it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "engine/generation_request.h"

namespace astrai {

class GenerateResult {
 public:
  explicit GenerateResult(int task_id) : task_id_(task_id) {}

  int task_id() const { return task_id_; }

  // Blocks until the request ends; returns its whole output.
  TaskOutput wait();
  // Like wait() with a deadline; nullopt on timeout.
  std::optional<TaskOutput> wait_for(std::chrono::milliseconds timeout);
  // For streams: blocks until more text or the end; nullopt once everything
  // was returned and the request ended. Pieces concatenate to wait().text.
  std::optional<std::string> next_piece();
  bool done() const;

  // Called by the request's decoder, on the scheduler thread.
  void push_piece(std::string piece);
  void finish(TaskOutput output);

 private:
  const int task_id_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> pieces_;
  std::optional<TaskOutput> output_;
};

}  // namespace astrai
