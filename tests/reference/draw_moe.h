// Drawing Mixture-of-Experts options for the reference's property tests
// (test_moe.cpp draws one sparse layer, test_forward.cpp whole models).
#pragma once

#include <rapidcheck.h>

#include "reference/model_config.h"

namespace astrai::test {

// The expert module's names, 1 to max_experts experts, any top-k of them,
// experts and a drawn shared expert 1 to max_width - 1 wide, each routing
// rule, renormalisation, a router bias, expert biases and gpt-oss's clamped
// activation (its limit 7, or small ones that clamp often) on or off.
inline void draw_moe_options(ModelConfig& c, int max_experts, int max_width) {
  c.options.moe = *rc::gen::element(MoeModule::Mlp, MoeModule::BlockSparseMoe);
  c.moe.n_experts = *rc::gen::inRange(1, max_experts + 1);
  c.moe.n_experts_used = *rc::gen::inRange(1, c.moe.n_experts + 1);
  c.moe.expert_hidden_dim = *rc::gen::inRange(1, max_width);
  c.moe.routing = *rc::gen::element(ExpertRouting::SoftmaxTopK, ExpertRouting::TopKSoftmax);
  c.moe.norm_topk_prob = *rc::gen::arbitrary<bool>();
  c.options.shared_expert = *rc::gen::arbitrary<bool>();
  if (c.options.shared_expert) c.moe.shared_expert_hidden_dim = *rc::gen::inRange(1, max_width);
  c.options.router_bias = *rc::gen::arbitrary<bool>();
  c.options.expert_biases = *rc::gen::arbitrary<bool>();
  c.moe.swiglu_limit = *rc::gen::element(0.0f, 0.05f, 0.5f, 7.0f);
}

}  // namespace astrai::test
