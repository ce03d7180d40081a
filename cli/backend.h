// Which implementation runs the model: the CPU reference, or the CUDA
// backend when it was built and a GPU is present. `serve` and `generate`
// share this choice and say at start-up which backend and device they use.
#pragma once

#include <memory>
#include <string>

#include "engine/inference_engine.h"
#include "engine/tokenizer/tokenizer.h"
#include "reference/model_weights.h"

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
// The weights and tokenizer are shared with the engine, never copied (the
// served-model builder moves them out of a LoadedModel: server/served_model.h).
std::shared_ptr<InferenceEngine> make_engine(std::shared_ptr<const ModelWeights> weights,
                                             std::shared_ptr<const Tokenizer> tokenizer, const EngineConfig& config,
                                             const std::string& requested, std::string* description,
                                             const std::string& cuda_dtype = "bf16");

}  // namespace astrai::cli
