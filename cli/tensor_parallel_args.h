// The tensor-parallel options `serve` and `generate` share, and the
// `astrai rank-worker` command that runs one rank other than 0
// (docs/tensor-parallel.md).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/arguments.h"
#include "cuda/tensor_parallel/tensor_parallel_options.h"

namespace astrai::cli {

// --tensor-parallel, --nnodes, --node-rank, --master-addr, --master-port.
void add_tensor_parallel_options(Arguments& args);

// The options resolved against the environment (mpirun, srun, a
// LeaderWorkerSet), with the command that starts this node's other ranks
// on `model_path` (and `tokenizer_path`, "" for none). Throws
// std::invalid_argument for inconsistent options. world 1: no tensor parallelism.
TensorParallelOptions tensor_parallel_options(const Arguments& args, const std::string& model_path,
                                              const std::string& tokenizer_path);

// For a process whose rank is not 0 (a launcher's, or the first on another
// node than rank 0's): runs the rank on `model_path` and returns its exit
// status; nullopt for rank 0, which serves.
std::optional<int> run_rank_unless_first(const TensorParallelOptions& tp, const std::string& model_path,
                                         const std::string& tokenizer_path);

// astrai rank-worker: one rank, as rank 0 (or its node's first process) starts it.
int run_rank_worker(std::span<const std::string_view> args);

}  // namespace astrai::cli
