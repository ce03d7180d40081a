// How a tensor-parallel group is started (make_tensor_parallel_executor and
// run_tensor_parallel_rank of cuda/cuda_backend.h): plain data, no CUDA.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/distributed/tensor_parallel_launch.h"

namespace astrai {

struct TensorParallelOptions {
  TensorParallelLaunch launch;  // resolved (resolve_tensor_parallel_launch)
  // The command that starts one rank of this node (the `astrai rank-worker`
  // line with the model's path); the group appends the rank's arguments.
  std::vector<std::string> rank_command;
  // How long ranks may take to join and to load their shards.
  double startup_timeout_s = 600.0;
  // Called once, on a watch thread, when a rank fails while serving (its
  // report, or how it ended). Unset: the message goes to stderr and the
  // process ends with status 70, taking the server down, as no step can
  // finish without every rank (the other ranks then end too: they are
  // children of this process, or see its connection close).
  std::function<void(const std::string& message)> on_rank_failure;
};

}  // namespace astrai
