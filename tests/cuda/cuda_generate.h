// The sequential generation loop of reference/generate.h with the forward
// pass on the CUDA executor: the whole prompt (after any prefix hit) in one
// batch, then one token at a time, through the paged cache's admit/reserve/
// commit/release. What a request gets alone on the GPU, and so the oracle of
// the batching tests on the CUDA executor.
#pragma once

#include <vector>

#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "reference/generate.h"

namespace astrai::test {

// Tokens chosen by `choose` (the same stop rules as astrai::generate), as task
// `task` of `cache`, which is released at the end. *prefix_hit (when given)
// receives the prompt tokens the cache already held.
std::vector<int> cuda_generate(Executor& executor, KVCache& cache, std::vector<int> prompt,
                               const GenerateOptions& options, const TokenChooser& choose, int task = 1,
                               int* prefix_hit = nullptr);

}  // namespace astrai::test
