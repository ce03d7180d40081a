// llama2.c legacy checkpoint reader (layout in llama2c_checkpoint.h).
#include "engine/model_files/llama2c/llama2c_checkpoint.h"

#include <array>
#include <span>
#include <stdexcept>

#include "engine/model_files/checked_math.h"
#include "engine/model_files/mapped_file.h"

namespace astrai {
namespace {

constexpr uint64_t kHeaderBytes = 7 * 4;

Llama2cHeader parse_header(ByteReader& r) {
  int32_t fields[7];
  static constexpr const char* names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size",
                                           "seq_len"};
  for (int i = 0; i < 7; ++i) fields[i] = r.read<int32_t>(std::string("header field ") + names[i]);
  Llama2cHeader h;
  ModelConfig& c = h.config;
  c.dim = fields[0];
  c.hidden_dim = fields[1];
  c.n_layers = fields[2];
  c.n_heads = fields[3];
  c.n_kv_heads = fields[4];
  // A negative vocab_size is llama2.c's flag for an unshared classifier.
  h.shared_classifier = fields[5] > 0;
  c.vocab_size = fields[5] == INT32_MIN ? 0 : (fields[5] < 0 ? -fields[5] : fields[5]);
  c.max_seq_len = fields[6];
  c.rope_theta = 10000.0f;
  c.norm_eps = 1e-5f;
  c.rope_layout = RopeLayout::AdjacentPairs;
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(r.name() + ": header does not describe a valid model (" + c.describe() + "): " + e.what());
  }
  return h;
}

// Sum over (count, rows, cols) products, overflow-checked, in floats.
uint64_t checked_floats(std::initializer_list<std::initializer_list<uint64_t>> terms) {
  uint64_t total = 0;
  for (const auto& term : terms) {
    std::optional<uint64_t> product = 1;
    for (uint64_t f : term) product = product ? checked_mul(*product, f) : product;
    const auto sum = product ? checked_add(total, *product) : std::nullopt;
    if (!sum) throw std::runtime_error("llama2.c checkpoint size overflows 64 bits");
    total = *sum;
  }
  return total;
}

uint64_t freq_cis_floats(const ModelConfig& c) {
  // freq_cis_real and freq_cis_imag, seq_len * head_size / 2 floats each.
  return uint64_t(c.max_seq_len) * uint64_t(c.head_dim());
}

xt::xtensor<float, 1> read_vector(ByteReader& r, int n, const std::string& what) {
  xt::xtensor<float, 1> v(std::array<size_t, 1>{size_t(n)});  // not {n}: that would be a 1-element value list
  r.read_floats(std::span<float>(v.data(), v.size()), what);
  return v;
}

xt::xtensor<float, 2> read_matrix(ByteReader& r, int rows, int cols, const std::string& what) {
  xt::xtensor<float, 2> m(std::array<size_t, 2>{size_t(rows), size_t(cols)});
  r.read_floats(std::span<float>(m.data(), m.size()), what);
  return m;
}

}  // namespace

Llama2cHeader read_llama2c_header(const std::string& path) {
  MappedFile file(path);
  ByteReader r(file.bytes(), path);
  return parse_header(r);
}

uint64_t llama2c_file_size(const Llama2cHeader& header) {
  const ModelConfig& c = header.config;
  const uint64_t dim = uint64_t(c.dim), hidden = uint64_t(c.hidden_dim), L = uint64_t(c.n_layers);
  const uint64_t vocab = uint64_t(c.vocab_size), kv_dim = uint64_t(c.kv_dim());
  const uint64_t floats = checked_floats({
      {vocab, dim},                       // token_embedding
      {L, dim},                           // rms_att
      {L, dim, dim},                      // wq
      {2, L, kv_dim, dim},                // wk, wv
      {L, dim, dim},                      // wo
      {L, dim},                           // rms_ffn
      {3, L, hidden, dim},                // w1, w2, w3
      {dim},                              // rms_final
      {freq_cis_floats(c)},               // freq_cis_real + freq_cis_imag
      {header.shared_classifier ? 0 : vocab, dim},  // wcls
  });
  const auto bytes = checked_mul(floats, 4);
  const auto total = bytes ? checked_add(*bytes, kHeaderBytes) : std::nullopt;
  if (!total) throw std::runtime_error("llama2.c checkpoint size overflows 64 bits");
  return *total;
}

ModelWeights load_llama2c_checkpoint(const std::string& path) {
  MappedFile file(path);
  ByteReader r(file.bytes(), path);
  const Llama2cHeader header = parse_header(r);
  const ModelConfig& c = header.config;
  uint64_t expected = 0;
  try {
    expected = llama2c_file_size(header);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what() + " (header: " + c.describe() + ")");
  }
  if (file.size() != expected) {
    throw std::runtime_error(path + ": file is " + std::to_string(file.size()) + " bytes, but its header (" +
                             c.describe() + (header.shared_classifier ? ", shared" : ", unshared") +
                             " classifier) implies " + std::to_string(expected) + " bytes" +
                             (file.size() < expected ? " (truncated?)" : " (trailing data?)"));
  }
  if (c.q_dim() != c.dim) throw std::logic_error("llama2.c models have n_heads * head_size == dim");

  ModelWeights w;
  w.config = c;
  w.token_embedding = read_matrix(r, c.vocab_size, c.dim, "token_embedding");
  w.layers.resize(size_t(c.n_layers));
  // The file groups each weight kind across all layers before the next kind.
  for (auto& L : w.layers) L.attn_norm = read_vector(r, c.dim, "rms_att_weight");
  for (auto& L : w.layers) L.wq = read_matrix(r, c.q_dim(), c.dim, "wq");
  for (auto& L : w.layers) L.wk = read_matrix(r, c.kv_dim(), c.dim, "wk");
  for (auto& L : w.layers) L.wv = read_matrix(r, c.kv_dim(), c.dim, "wv");
  for (auto& L : w.layers) L.wo = read_matrix(r, c.dim, c.q_dim(), "wo");
  for (auto& L : w.layers) L.ffn_norm = read_vector(r, c.dim, "rms_ffn_weight");
  for (auto& L : w.layers) L.w_gate = read_matrix(r, c.hidden_dim, c.dim, "w1");
  for (auto& L : w.layers) L.w_down = read_matrix(r, c.dim, c.hidden_dim, "w2");
  for (auto& L : w.layers) L.w_up = read_matrix(r, c.hidden_dim, c.dim, "w3");
  w.final_norm = read_vector(r, c.dim, "rms_final_weight");
  r.skip(freq_cis_floats(c) * 4, "freq_cis_real and freq_cis_imag");
  w.classifier = header.shared_classifier ? xt::xtensor<float, 2>(w.token_embedding)
                                          : read_matrix(r, c.vocab_size, c.dim, "wcls");
  w.validate_shapes();
  return w;
}

}  // namespace astrai
