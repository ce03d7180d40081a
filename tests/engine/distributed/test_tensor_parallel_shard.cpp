// A tensor-parallel rank's part of a model (engine/distributed/tensor_parallel_shard.h).
// Oracles, none of them the code under test: the ranks' parts put back
// together are the full tensors, each element once (column-parallel along
// rows, row-parallel along columns; replicated KV heads equal the head that
// Llama's grouped-query rule gives the rank's query heads); the rank's model
// applies the same grouped-query rule to its heads as the full model to the
// same heads; and the row-parallel identity: the full output projection is
// the sum over ranks of each rank's columns times its slice of the input
// (in float64, where the sums are exact enough to compare at 1e-12).
// Quantized blocks: a file's blocks sliced by the shard decode to the
// shard's slice of the decoded values, bit for bit (the same decoder on the
// same bytes).
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/distributed/tensor_parallel_shard.h"
#include "engine/model_files/gguf/gguf_model.h"
#include "engine/model_files/gguf/gguf_types.h"
#include "engine/model_files/load_model.h"
#include "engine/model_files/quant/dequantize.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "reference/synthetic_model.h"
#include "tests/support/shared_data.h"

namespace astrai {
namespace {

// A Llama config whose heads and feed-forward size divide by `world`, drawn.
rc::Gen<std::pair<ModelConfig, int>> config_and_world() {
  return rc::gen::exec([] {
    const int world = *rc::gen::element(1, 2, 4, 8);
    const int kv = *rc::gen::element(1, 2, 4, 8);
    if (kv % world != 0 && world % kv != 0) RC_DISCARD("the KV heads do not divide");
    const int group = *rc::gen::inRange(1, 5);
    const int heads = kv * group;
    if (heads % world != 0) RC_DISCARD("the query heads do not divide");
    ModelConfig c;
    c.n_heads = heads;
    c.n_kv_heads = kv;
    c.explicit_head_dim = 2 * *rc::gen::inRange(1, 5);
    c.dim = *rc::gen::inRange(1, 5) * 4;
    c.hidden_dim = world * *rc::gen::inRange(1, 6);
    c.n_layers = *rc::gen::inRange(1, 3);
    c.vocab_size = 16;
    c.max_seq_len = 8;
    c.options.qkv_bias = *rc::gen::arbitrary<bool>();
    c.options.qk_norm = *rc::gen::arbitrary<bool>();
    if (*rc::gen::arbitrary<bool>()) {  // Mixture of Experts: each rank a slice of every expert
      c.options.moe = MoeModule::Mlp;
      c.moe.n_experts = *rc::gen::inRange(1, 5);
      c.moe.n_experts_used = *rc::gen::inRange(1, c.moe.n_experts + 1);
      c.moe.expert_hidden_dim = world * *rc::gen::inRange(1, 4);
      c.moe.sparse_step = *rc::gen::inRange(1, 3);
      c.options.shared_expert = *rc::gen::arbitrary<bool>();
      if (c.options.shared_expert) c.moe.shared_expert_hidden_dim = world * *rc::gen::inRange(1, 4);
    }
    return std::make_pair(c, world);
  });
}

struct Tensors {
  std::map<std::string, ModelTensor> by_name;
  std::map<std::string, std::vector<float>> values;
};

Tensors read_all(const ModelSource& s) {
  Tensors t;
  for_each_model_tensor(s.config, s.tied, [&](const ModelTensor& m) {
    t.by_name.emplace(m.gguf_name(), m);
    t.values[m.gguf_name()] = s.read(m);
  });
  return t;
}

// Row i of a [rows, cols] row-major tensor.
std::vector<float> row_of(const std::vector<float>& v, size_t cols, size_t i) {
  return {v.begin() + long(i * cols), v.begin() + long((i + 1) * cols)};
}

}  // namespace

TEST_CASE("tensor parallel: the ranks' parts put back together are the model", "[tensor_parallel]") {
  rc::prop("every element of every tensor is in the part of the rank Megatron's split gives it", [] {
    const auto [c, world] = *config_and_world();
    const ModelSource full = synthetic_model_source(c, 11, false);
    const Tensors whole = read_all(full);
    std::vector<Tensors> parts;
    for (int r = 0; r < world; ++r) parts.push_back(read_all(shard_model_source(full, {r, world})));
    const size_t hd = size_t(c.head_dim());
    for (const auto& [name, t] : whole.by_name) {
      const std::vector<float>& v = whole.values.at(name);
      const std::string kind = t.row->gguf_name;
      const size_t cols = t.shape.size() == 2 ? t.shape[1] : 1;
      std::vector<float> joined;
      // Expert stacks [experts, out, in]: each expert's matrix split as a dense layer's.
      const bool column_stack = kind == "ffn_gate_exps.weight" || kind == "ffn_up_exps.weight";
      if (column_stack || kind == "ffn_down_exps.weight") {
        const size_t experts = t.shape[0], out = t.shape[1], in = t.shape[2];
        for (size_t e = 0; e < experts; ++e)
          for (size_t i = 0; i < (column_stack ? 1 : out); ++i)
            for (int r = 0; r < world; ++r) {  // an expert's rows rank after rank, or each row's columns
              const auto& p = parts[size_t(r)].values.at(name);
              const size_t per_expert = p.size() / experts, n = column_stack ? per_expert : per_expert / out;
              RC_ASSERT(per_expert * size_t(world) == out * in);
              joined.insert(joined.end(), p.begin() + long(e * per_expert + i * n),
                            p.begin() + long(e * per_expert + i * n + n));
            }
        RC_ASSERT(joined == v);
        continue;
      }
      if (kind == "attn_q.weight" || kind == "attn_q.bias" || kind == "ffn_gate.weight" || kind == "ffn_up.weight" ||
          kind == "ffn_gate_shexp.weight" || kind == "ffn_up_shexp.weight") {
        for (int r = 0; r < world; ++r) {  // rows, rank after rank
          const auto& p = parts[size_t(r)].values.at(name);
          joined.insert(joined.end(), p.begin(), p.end());
        }
        RC_ASSERT(joined == v);
      } else if (kind == "attn_k.weight" || kind == "attn_v.weight" || kind == "attn_k.bias" || kind == "attn_v.bias") {
        // Each full KV head h is held by the ranks whose query heads use it
        // (Llama's rule: query head q uses KV head q / (H / K)); each such
        // rank holds exactly that head's rows.
        for (int r = 0; r < world; ++r) {
          const auto& p = parts[size_t(r)].values.at(name);
          const int q0 = r * c.n_heads / world, q1 = (r + 1) * c.n_heads / world;
          const int h0 = q0 / (c.n_heads / c.n_kv_heads), h1 = (q1 - 1) / (c.n_heads / c.n_kv_heads) + 1;
          RC_ASSERT(p.size() == size_t(h1 - h0) * hd * cols);
          RC_ASSERT(std::equal(p.begin(), p.end(), v.begin() + long(size_t(h0) * hd * cols)));
        }
      } else if (kind == "attn_output.weight" || kind == "ffn_down.weight" || kind == "ffn_down_shexp.weight") {
        for (size_t i = 0; i < t.shape[0]; ++i)  // columns, rank after rank, row by row
          for (int r = 0; r < world; ++r) {
            const auto& p = parts[size_t(r)].values.at(name);
            const size_t part_cols = p.size() / t.shape[0];
            const auto row = row_of(p, part_cols, i);
            joined.insert(joined.end(), row.begin(), row.end());
          }
        RC_ASSERT(joined == v);
      } else {
        for (int r = 0; r < world; ++r) RC_ASSERT(parts[size_t(r)].values.at(name) == v);  // replicated
      }
    }
  });
}

TEST_CASE("tensor parallel: a rank's model groups its query heads as the full model does", "[tensor_parallel]") {
  rc::prop("local query head j of rank r uses the KV head the full model gives head q_first + j", [] {
    const auto [c, world] = *config_and_world();
    for (int r = 0; r < world; ++r) {
      const ShardRanges s = shard_ranges(c, {r, world});
      const ModelConfig local = shard_config(c, {r, world});
      RC_ASSERT(local.head_dim() == c.head_dim());
      RC_ASSERT(local.dim == c.dim);
      RC_ASSERT(local.n_heads * world == c.n_heads);
      RC_ASSERT(local.hidden_dim * world == c.hidden_dim);
      for (int j = 0; j < local.n_heads; ++j) {
        const int local_kv = j / (local.n_heads / local.n_kv_heads);
        const int full_kv = (s.q_first + j) / (c.n_heads / c.n_kv_heads);
        RC_ASSERT(s.kv_first + local_kv == full_kv);
      }
    }
  });
}

TEST_CASE("tensor parallel: the row-parallel products sum to the full one", "[tensor_parallel]") {
  rc::prop("W x = sum over ranks of W[:, rank's columns] x[rank's columns] (float64)", [] {
    const auto [c, world] = *config_and_world();
    const ModelSource full = synthetic_model_source(c, 3, false);
    const Tensors whole = read_all(full);
    for (const std::string name : {"blk.0.attn_output.weight", "blk.0.ffn_down.weight"}) {
      if (!whole.by_name.count(name)) continue;  // a sparse layer 0 has expert stacks instead
      const ModelTensor& t = whole.by_name.at(name);
      const size_t rows = t.shape[0], cols = t.shape[1];
      const auto x = *rc::gen::container<std::vector<double>>(cols, rc::gen::map(rc::gen::inRange(-100, 100),
                                                                                  [](int i) { return i / 37.0; }));
      std::vector<double> want(rows, 0.0), got(rows, 0.0);
      const auto& w = whole.values.at(name);
      for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < cols; ++j) want[i] += double(w[i * cols + j]) * x[j];
      size_t col0 = 0;
      for (int r = 0; r < world; ++r) {
        const ModelSource part = shard_model_source(full, {r, world});
        const Tensors p = read_all(part);
        const auto& pw = p.values.at(name);
        const size_t pc = p.by_name.at(name).shape[1];
        for (size_t i = 0; i < rows; ++i)
          for (size_t j = 0; j < pc; ++j) got[i] += double(pw[i * pc + j]) * x[col0 + j];
        col0 += pc;
      }
      RC_ASSERT(col0 == cols);
      for (size_t i = 0; i < rows; ++i) RC_ASSERT(std::abs(got[i] - want[i]) <= 1e-12 * (1.0 + std::abs(want[i])));
    }
  });
}

TEST_CASE("tensor parallel: a quantized file's blocks are sliced as its values", "[tensor_parallel]") {
  // dim 512 and ffn 1024: rows of whole 256-weight K-quant blocks; a rank's
  // columns of w_down (ffn / world) are whole blocks for 2 and 4 ranks, and
  // split blocks for 8 (128 columns): then the shard gives values only.
  ModelConfig c;
  c.dim = 512;
  c.hidden_dim = 1024;
  c.n_layers = 1;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.vocab_size = 300;  // the synthetic tokenizer's 259 pieces and more
  c.max_seq_len = 16;
  for (const auto& formats : {std::pair{GgufDType::Q8_0, GgmlType::Q8_0}, std::pair{GgufDType::Q4_K, GgmlType::Q4_K}}) {
    const GgufDType dtype = formats.first;  // not structured bindings: clang 14's lambdas cannot capture those
    const GgmlType type = formats.second;
    const auto path = test::scratch_dir() / ("tp-shard-" + gguf_dtype_name(dtype) + ".gguf");
    write_gguf_model(path.string(), synthetic_model_source(c, 5, false), make_synthetic_tokenizer(c.vocab_size), dtype,
                     "tp-shard");
    const OpenedModel opened = open_model(path.string());
    const ModelSource& full = opened.weights;
    const auto traits = ggml_type_traits(uint32_t(type));
    REQUIRE(traits);
    for (const int world : {2, 4, 8}) {
      for (int r = 0; r < world; ++r) {
        const ModelSource part = shard_model_source(full, {r, world});
        for_each_model_tensor(part.config, part.tied, [&](const ModelTensor& t) {
          const auto blocks = part.blocks(t);
          ModelTensor whole{t.row, t.layer, {extent_of(t.row->shape[0], c)}};
          if (t.row->rank() == 2) whole.shape.push_back(extent_of(t.row->shape[1], c));
          const auto full_blocks = full.blocks(whole);
          if (!full_blocks) {
            CHECK(!blocks);
            return;
          }
          INFO(gguf_dtype_name(dtype) << " rank " << r << " of " << world << ": " << t.gguf_name());
          const std::string kind = t.row->gguf_name;
          const bool split_columns = kind == "ffn_down.weight" && c.hidden_dim / world % int(traits->block_size) != 0;
          const bool split_q_columns = kind == "attn_output.weight" && c.q_dim() / world % int(traits->block_size) != 0;
          if (split_columns || split_q_columns) {
            CHECK(!blocks);
            return;
          }
          REQUIRE(blocks);
          std::vector<float> decoded(t.shape[0] * t.shape[1]);
          quant::dequantize(type, blocks->bytes, decoded);
          CHECK(decoded == part.read(t));  // the same decoder, the same bytes: equal bits
          const bool column_slice = kind == "attn_output.weight" || kind == "ffn_down.weight";
          CHECK(bool(blocks->owner) == column_slice);  // rows: the file's own bytes, no copy
          if (!column_slice) {
            CHECK(blocks->bytes.data() >= full_blocks->bytes.data());
            CHECK(blocks->bytes.data() + blocks->bytes.size() <= full_blocks->bytes.data() + full_blocks->bytes.size());
          }
        });
      }
    }
  }
}

TEST_CASE("tensor parallel: counts that do not divide are refused, naming them", "[tensor_parallel]") {
  ModelConfig c;
  c.dim = 64;
  c.hidden_dim = 172;
  c.n_layers = 1;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.vocab_size = 16;
  c.max_seq_len = 8;
  CHECK_NOTHROW(check_tensor_parallel(c, {0, 4}));
  CHECK_THROWS_WITH(check_tensor_parallel(c, {0, 8}), Catch::Contains("a feed-forward size of 172"));
  c.hidden_dim = 176;
  CHECK_THROWS_WITH(check_tensor_parallel(c, {0, 16}), Catch::Contains("8 query heads"));
  c.n_kv_heads = 8;
  c.n_heads = 24;
  c.hidden_dim = 192;
  CHECK_THROWS_WITH(check_tensor_parallel(c, {0, 3}), Catch::Contains("8 KV heads"));
  CHECK_THROWS_WITH(check_tensor_parallel(c, {3, 3}), Catch::Contains("rank 3 of 3"));
  CHECK_THROWS(check_tensor_parallel(c, {0, 0}));
  c.options.moe = MoeModule::Mlp;
  c.moe.n_experts = 4;
  c.moe.n_experts_used = 2;
  c.moe.expert_hidden_dim = 36;
  CHECK_NOTHROW(check_tensor_parallel(c, {0, 2}));
  CHECK_THROWS_WITH(check_tensor_parallel(c, {0, 8}), Catch::Contains("an expert feed-forward size of 36"));
  c.options.shared_expert = true;
  c.moe.shared_expert_hidden_dim = 20;
  CHECK_THROWS_WITH(check_tensor_parallel(c, {0, 8}), Catch::Contains("an expert feed-forward size of 36"));
  c.moe.expert_hidden_dim = 32;
  CHECK_THROWS_WITH(check_tensor_parallel(c, {0, 8}), Catch::Contains("a shared expert feed-forward size of 20"));
}

}  // namespace astrai
