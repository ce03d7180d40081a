// A tensor-parallel rank other than 0 (docs/tensor-parallel.md): it
// connects to rank 0, says who it is and what it loaded, joins the NCCL
// communicator, uploads its shard, and then runs each step rank 0 sends on
// its own cache (the same plan, its own heads), until rank 0 says Shutdown.
// The first process of a node other than rank 0's starts the node's other
// ranks, as rank 0 does on its node.
//
// A failure (a bad message, a CUDA or NCCL error) is reported to rank 0
// before the rank exits, so rank 0's message names it. If rank 0 goes away
// while a step waits in a collective (a GPU's NCCL would wait for ever), a
// watch thread ends the process.
#pragma once

#include "cuda/tensor_parallel/tensor_parallel_options.h"
#include "engine/model_files/model_source.h"

namespace astrai::cuda {

// Returns the process's exit status (see run_tensor_parallel_rank, cuda_backend.h).
int run_rank(const ModelSource& full, const TensorParallelOptions& tp);

}  // namespace astrai::cuda
