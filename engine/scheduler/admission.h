// Whether a new request may join the scheduler's queue (submit() throws
// QueueFullError when not): --max-running places run, --max-waiting requests
// wait, and a request that will take a free running place at the next step
// is not waiting. Counted as the policy will admit: the requests queued
// ahead of it, in order, take the free places first, first come first
// served, and the first that does not fit stops the others
// (StepPolicy::refill). So `--max-running 1 --max-waiting 1` holds two
// requests whether or not the loop has yet moved the first one to running
// (tests/engine/scheduler/test_lifecycle.cpp, tests/server/test_errors.cpp).
#pragma once

#include <span>

namespace astrai {

// free_places: max running places less those taken; queued: the places each
// queued request needs (1 + its forks), in queue order; places: the new
// request's.
inline bool queue_has_room(int free_places, std::span<const int> queued, int places, int max_waiting) {
  int waiting = 0;
  auto take = [&](int need) {
    if (waiting == 0 && need <= free_places) free_places -= need;
    else ++waiting;
  };
  for (const int need : queued) take(need);
  take(places);
  return waiting <= max_waiting;
}

}  // namespace astrai
