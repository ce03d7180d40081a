#include "reference/model_weights.h"

#include <sstream>
#include <stdexcept>
#include <string>

namespace astrai {
namespace {

template <class Tensor>
void expect_shape(const Tensor& t, std::vector<size_t> want, const std::string& name) {
  std::vector<size_t> got(t.shape().begin(), t.shape().end());
  if (got == want) return;
  std::ostringstream msg;
  msg << "tensor " << name << " has shape [";
  for (size_t i = 0; i < got.size(); ++i) msg << (i ? ", " : "") << got[i];
  msg << "], expected [";
  for (size_t i = 0; i < want.size(); ++i) msg << (i ? ", " : "") << want[i];
  msg << "]";
  throw std::invalid_argument(msg.str());
}

}  // namespace

void ModelWeights::validate_shapes() const {
  config.validate();
  const auto dim = size_t(config.dim), hidden = size_t(config.hidden_dim), vocab = size_t(config.vocab_size);
  const auto q_dim = size_t(config.q_dim()), kv_dim = size_t(config.kv_dim());
  expect_shape(token_embedding, {vocab, dim}, "token_embedding");
  expect_shape(final_norm, {dim}, "final_norm");
  expect_shape(classifier, {vocab, dim}, "classifier");
  if (layers.size() != size_t(config.n_layers))
    throw std::invalid_argument("model has " + std::to_string(layers.size()) + " layers, config says " +
                                std::to_string(config.n_layers));
  for (size_t l = 0; l < layers.size(); ++l) {
    const auto& L = layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    expect_shape(L.attn_norm, {dim}, p + "attn_norm");
    expect_shape(L.wq, {q_dim, dim}, p + "wq");
    expect_shape(L.wk, {kv_dim, dim}, p + "wk");
    expect_shape(L.wv, {kv_dim, dim}, p + "wv");
    expect_shape(L.wo, {dim, q_dim}, p + "wo");
    expect_shape(L.ffn_norm, {dim}, p + "ffn_norm");
    // Optional tensors are empty exactly when their option is off.
    const auto head_dim = size_t(config.head_dim());
    const auto none = size_t(0);
    const MoeConfig& m = config.moe;
    const bool sparse = m.sparse(int(l)), dense = !sparse, shared = sparse && config.options.shared_expert;
    const auto experts = sparse ? size_t(m.n_experts) : none, eh = size_t(m.expert_hidden_dim);
    const auto sh = shared ? size_t(m.shared_expert_hidden_dim) : none;
    expect_shape(L.w_gate, {dense ? hidden : none, dense ? dim : none}, p + "w_gate");
    expect_shape(L.w_down, {dense ? dim : none, dense ? hidden : none}, p + "w_down");
    expect_shape(L.w_up, {dense ? hidden : none, dense ? dim : none}, p + "w_up");
    expect_shape(L.router, {experts, sparse ? dim : none}, p + "router");
    expect_shape(L.router_bias, {sparse && config.options.router_bias ? experts : none}, p + "router_bias");
    expect_shape(L.exp_gate, {experts, sparse ? eh : none, sparse ? dim : none}, p + "exp_gate");
    expect_shape(L.exp_up, {experts, sparse ? eh : none, sparse ? dim : none}, p + "exp_up");
    expect_shape(L.exp_down, {experts, sparse ? dim : none, sparse ? eh : none}, p + "exp_down");
    const bool biased = sparse && config.options.expert_biases;
    expect_shape(L.exp_gate_bias, {biased ? experts : none, biased ? eh : none}, p + "exp_gate_bias");
    expect_shape(L.exp_up_bias, {biased ? experts : none, biased ? eh : none}, p + "exp_up_bias");
    expect_shape(L.exp_down_bias, {biased ? experts : none, biased ? dim : none}, p + "exp_down_bias");
    expect_shape(L.bo, {config.options.out_bias ? dim : none}, p + "bo");
    expect_shape(L.shexp_gate_inp, {shared ? 1 : none, shared ? dim : none}, p + "shexp_gate_inp");
    expect_shape(L.shexp_gate, {sh, shared ? dim : none}, p + "shexp_gate");
    expect_shape(L.shexp_up, {sh, shared ? dim : none}, p + "shexp_up");
    expect_shape(L.shexp_down, {shared ? dim : none, sh}, p + "shexp_down");
    expect_shape(L.bq, {config.options.qkv_bias ? q_dim : none}, p + "bq");
    expect_shape(L.bk, {config.options.qkv_bias ? kv_dim : none}, p + "bk");
    expect_shape(L.bv, {config.options.qkv_bias ? kv_dim : none}, p + "bv");
    expect_shape(L.q_norm, {config.options.qk_norm ? head_dim : none}, p + "q_norm");
    expect_shape(L.k_norm, {config.options.qk_norm ? head_dim : none}, p + "k_norm");
    expect_shape(L.sinks, {config.options.attention_sinks ? size_t(config.n_heads) : none}, p + "sinks");
    expect_shape(L.post_attn_norm, {config.options.sandwich_norms ? dim : none}, p + "post_attn_norm");
    expect_shape(L.post_ffn_norm, {config.options.sandwich_norms ? dim : none}, p + "post_ffn_norm");
  }
}

}  // namespace astrai
