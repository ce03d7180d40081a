// Which implementation runs the model: the CPU reference, or the CUDA
// backend when it was built and a GPU is present. `serve` and `generate`
// share this choice and say at start-up which backend and device they use.
#pragma once

#include <memory>
#include <string>

#include "cuda/tensor_parallel/tensor_parallel_options.h"
#include "engine/inference_engine.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/model_files/model_source.h"

namespace astrai::cli {

// requested: "auto" (CUDA when built and usable, else the reference),
// "reference", or "cuda" (an error naming the reason when unusable). In a
// -Dcuda=emulated build only "cuda" runs the emulated device (the kernels on
// the CPU: for tests, slow, and a line on stderr says so); "auto" keeps the
// reference there.
// Returns the engine and fills *description, e.g. "cpu-reference" or
// "cuda-bf16 on NVIDIA H200 (sm_90, 139.8 GiB)". Throws
// std::invalid_argument for an unknown name or an unusable CUDA backend.
// cuda_dtype: the CUDA executor's weights and cache, "bf16" (the serving
// default) or "f32" (exact comparisons: the golden greedy ids); the reference
// is float32 whatever it says.
// The weights are read from `weights` (their files): the CUDA backend
// uploads them tensor by tensor and keeps no host copy; the reference reads
// them into float32 once.
// tp: with tp.launch.world > 1, this process is rank 0 of a tensor-parallel
// group on the CUDA backend (which `auto` then picks; the reference cannot):
// the engine's executor runs every step on all the ranks.
// draft: a draft model for speculative decoding (--draft-model), run on the
// same backend as the target with a KV cache of its own, made before the
// target's (whose cache takes most of what memory is left);
// config.scheduler.speculation is then its proposer. Not with tensor
// parallelism (std::invalid_argument).
struct DraftModel {
  const ModelSource* weights = nullptr;
  int tokens = 0;  // guesses per step
};
std::shared_ptr<InferenceEngine> make_engine(const ModelSource& weights, std::shared_ptr<const Tokenizer> tokenizer,
                                             const EngineConfig& config,
                                             const std::string& requested, std::string* description,
                                             const std::string& cuda_dtype = "bf16",
                                             const TensorParallelOptions& tp = {}, const DraftModel& draft = {});

}  // namespace astrai::cli
