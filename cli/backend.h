// Which implementation runs the model: the CPU reference, or the CUDA
// backend when it was built and a GPU is present. `serve` and `generate`
// share this choice and say at start-up which backend and device they use.
#pragma once

#include <memory>
#include <string>

#include "engine/inference_engine.h"
#include "engine/model_files/load_model.h"

namespace astrai::cli {

// requested: "auto" (CUDA when built and usable, else the reference),
// "reference", or "cuda" (an error naming the reason when unusable).
// Returns the engine and fills *description, e.g. "cpu-reference" or
// "cuda-bf16 on NVIDIA H200 (sm_90, 139.8 GiB)". Throws
// std::invalid_argument for an unknown name or an unusable CUDA backend.
std::shared_ptr<InferenceEngine> make_engine(const LoadedModel& model, const EngineConfig& config,
                                             const std::string& requested, std::string* description);

}  // namespace astrai::cli
