// The synthetic models and prompts whose outputs golden/synthetic.json pins.
// Shared by the generator (golden/make_golden.cpp) and the test
// (tests/golden/test_golden_synthetic.cpp), so both always mean the same cases.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/synthetic_model.h"

namespace astrai::golden {

struct SyntheticCase {
  std::string name;
  ModelConfig config;
  uint64_t seed;
  std::vector<int> prompt;
  int max_new_tokens;
  std::vector<int> logit_ids;  // which logits of the last prompt position to pin
};

inline std::vector<SyntheticCase> synthetic_cases() {
  ModelConfig tiny = preset_config("tiny");  // adjacent-pair RoPE, GQA 4:2
  ModelConfig half = tiny;
  half.rope_layout = RopeLayout::RotateHalf;
  half.rope_theta = 500000.0f;
  ModelConfig mha = preset_config("stories260K");
  mha.n_kv_heads = mha.n_heads;
  mha.n_layers = 2;
  return {
      {"tiny-adjacent-pairs", tiny, 1, {1, 17, 42, 5, 33, 8}, 24, {0, 1, 2, 31, 63}},
      {"tiny-rotate-half", half, 2, {1, 60, 2, 9}, 24, {0, 7, 40, 63}},
      {"stories260K-shape-mha", mha, 3, {1, 400, 300, 259, 260, 261, 500, 77}, 32, {0, 1, 100, 511}},
  };
}

}  // namespace astrai::golden
