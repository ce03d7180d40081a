// A tensor-parallel rank's part of a model (see tensor_parallel_shard.h).
#include "engine/distributed/tensor_parallel_shard.h"

#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model_files/gguf/gguf_types.h"

namespace astrai {
namespace {

// A [first, first + count) slice of one axis, in elements.
struct Slice {
  size_t first = 0, count = 0;
};

// The slice of axis `axis` (0: rows, 1: columns) of a tensor whose extent
// there is `extent`, or nullopt where the rank holds the whole axis.
std::optional<Slice> axis_slice(Extent extent, const ModelConfig& full, const ShardRanges& s) {
  const size_t hd = size_t(full.head_dim());
  switch (extent) {
    case Extent::QDim: return Slice{size_t(s.q_first) * hd, size_t(s.q_heads) * hd};
    case Extent::KvDim: return Slice{size_t(s.kv_first) * hd, size_t(s.kv_heads) * hd};
    case Extent::Heads: return Slice{size_t(s.q_first), size_t(s.q_heads)};  // attention sinks, one per query head
    case Extent::Hidden: return Slice{size_t(s.hidden_first), size_t(s.hidden_rows)};
    case Extent::ExpertHidden: return Slice{size_t(s.expert_hidden_first), size_t(s.expert_hidden_rows)};
    case Extent::SharedHidden: return Slice{size_t(s.shared_hidden_first), size_t(s.shared_hidden_rows)};
    default: return std::nullopt;
  }
}

// The full model's tensor of which `local` is the rank's part.
ModelTensor full_tensor(const ModelTensor& local, const ModelConfig& full) {
  ModelTensor t{local.row, local.layer, {}};
  for (size_t axis = 0; axis < local.row->rank(); ++axis) t.shape.push_back(extent_of(local.row->shape[axis], full));
  return t;
}

// A tensor as `matrices` row-major [rows, cols] matrices back to back, the
// extents of its rows and columns named: a vector is one column, a matrix
// itself, an expert stack [experts, rows, cols] one matrix per expert.
struct MatrixView {
  size_t matrices = 1, rows = 0, cols = 1;
  Extent row_extent = Extent::One;
  std::optional<Extent> col_extent;
};
MatrixView matrix_view(const ModelTensor& t) {
  const WeightRow& r = *t.row;
  if (r.rank() == 3) return {t.shape[0], t.shape[1], t.shape[2], r.shape[1], r.shape[2]};
  if (r.rank() == 2) return {1, t.shape[0], t.shape[1], r.shape[0], r.shape[1]};
  return {1, t.shape[0], 1, r.shape[0], std::nullopt};
}

// gpt-oss's expert down bias: each rank adds it to its own partial sum of
// an expert's output (cuda/moe_ffn.h), before the layer's all-reduce adds
// the ranks' sums, so rank 0 holds it and the others hold zeros (adding 0.0f
// changes no value), and the whole output has it once. (The attention output's
// bias needs nothing: the executor adds it after that all-reduce.)
bool added_to_partial_sums(const WeightRow& row) {
  const auto* m = std::get_if<WeightMatrix LayerWeights::*>(&row.field);
  return m && *m == &LayerWeights::exp_down_bias;
}

// The traits of a ggml type by name ("Q4_K"), or nullopt.
std::optional<GgmlTypeTraits> traits_named(const std::string& name) {
  for (uint32_t id = 0; id < 64; ++id)
    if (const auto t = ggml_type_traits(id); t && t->name == name) return t;
  return std::nullopt;
}

}  // namespace

void check_tensor_parallel(const ModelConfig& c, TensorParallelRank r) {
  const int w = r.world;
  if (w < 1) throw std::invalid_argument("tensor parallel: " + std::to_string(w) + " ranks");
  if (r.rank < 0 || r.rank >= w)
    throw std::invalid_argument("tensor parallel: rank " + std::to_string(r.rank) + " of " + std::to_string(w));
  const auto refuse = [&](const std::string& what) {
    throw std::invalid_argument("tensor parallel " + std::to_string(w) + " does not divide the model (" +
                                c.describe() + "): " + what);
  };
  if (c.n_heads % w != 0) refuse(std::to_string(c.n_heads) + " query heads");
  if (c.hidden_dim % w != 0) refuse("a feed-forward size of " + std::to_string(c.hidden_dim));
  if (c.moe.expert_hidden_dim % w != 0) refuse("an expert feed-forward size of " + std::to_string(c.moe.expert_hidden_dim));
  if (c.moe.shared_expert_hidden_dim % w != 0)
    refuse("a shared expert feed-forward size of " + std::to_string(c.moe.shared_expert_hidden_dim));
  if (c.n_kv_heads % w != 0 && w % c.n_kv_heads != 0)
    refuse(std::to_string(c.n_kv_heads) + " KV heads (they must divide by the ranks, or the ranks by them)");
}

ShardRanges shard_ranges(const ModelConfig& c, TensorParallelRank r) {
  check_tensor_parallel(c, r);
  const int w = r.world;
  ShardRanges s;
  s.q_heads = c.n_heads / w;
  s.q_first = r.rank * s.q_heads;
  s.hidden_rows = c.hidden_dim / w;
  s.hidden_first = r.rank * s.hidden_rows;
  s.expert_hidden_rows = c.moe.expert_hidden_dim / w;
  s.expert_hidden_first = r.rank * s.expert_hidden_rows;
  s.shared_hidden_rows = c.moe.shared_expert_hidden_dim / w;
  s.shared_hidden_first = r.rank * s.shared_hidden_rows;
  if (c.n_kv_heads % w == 0) {
    s.kv_heads = c.n_kv_heads / w;
    s.kv_first = r.rank * s.kv_heads;
  } else {  // fewer KV heads than ranks: the one head this rank's queries use
    s.kv_heads = 1;
    s.kv_first = r.rank * c.n_kv_heads / w;
  }
  return s;
}

ModelConfig shard_config(const ModelConfig& full, TensorParallelRank r) {
  const ShardRanges s = shard_ranges(full, r);
  ModelConfig c = full;
  c.explicit_head_dim = full.head_dim();
  c.n_heads = s.q_heads;
  c.n_kv_heads = s.kv_heads;
  c.hidden_dim = s.hidden_rows;
  c.moe.expert_hidden_dim = s.expert_hidden_rows;
  c.moe.shared_expert_hidden_dim = s.shared_hidden_rows;
  return c;
}

ModelSource shard_model_source(const ModelSource& full, TensorParallelRank r) {
  const ShardRanges ranges = shard_ranges(full.config, r);
  ModelSource out;
  out.config = shard_config(full.config, r);
  out.tied = full.tied;
  out.stored = full.stored;
  const ModelSource* source = &full;
  const ModelConfig fc = full.config;
  out.read = [source, fc, ranges, rank = r.rank](const ModelTensor& local) {
    const ModelTensor t = full_tensor(local, fc);
    if (rank != 0 && added_to_partial_sums(*t.row)) {
      size_t n = 1;
      for (const size_t e : t.shape) n *= e;
      return std::vector<float>(n, 0.0f);
    }
    std::vector<float> values = source->read(t);
    const MatrixView v = matrix_view(t);
    const auto rows = axis_slice(v.row_extent, fc, ranges);
    const auto cols = v.col_extent ? axis_slice(*v.col_extent, fc, ranges) : std::nullopt;
    if (!rows && !cols) return values;
    const Slice rs = rows.value_or(Slice{0, v.rows}), cs = cols.value_or(Slice{0, v.cols});
    std::vector<float> part(v.matrices * rs.count * cs.count);
    for (size_t m = 0; m < v.matrices; ++m)
      for (size_t i = 0; i < rs.count; ++i)
        std::memcpy(part.data() + (m * rs.count + i) * cs.count,
                    values.data() + (m * v.rows + rs.first + i) * v.cols + cs.first, cs.count * sizeof(float));
    return part;
  };
  if (full.blocks) {
    out.blocks = [source, fc, ranges](const ModelTensor& local) -> std::optional<TensorBlocks> {
      const ModelTensor t = full_tensor(local, fc);
      if (added_to_partial_sums(*t.row)) return std::nullopt;  // read as values (zeros past rank 0)
      std::optional<TensorBlocks> blocks = source->blocks(t);
      if (!blocks) return blocks;
      if (t.row->rank() == 1)  // a vector: whole, or (a sliced bias) its values read instead
        return axis_slice(t.row->shape[0], fc, ranges) ? std::nullopt : blocks;
      if (t.row->rank() == 3) return std::nullopt;  // expert stacks: the values (the device decodes them at load)
      const auto traits = traits_named(blocks->type);
      const size_t n_rows = t.shape[0], n_cols = t.shape[1];
      if (!traits || n_cols % traits->block_size != 0) return std::nullopt;  // rows not whole blocks: read values
      const size_t row_bytes = n_cols / traits->block_size * traits->block_bytes;
      if (blocks->bytes.size() != n_rows * row_bytes) return std::nullopt;
      if (const auto rows = axis_slice(t.row->shape[0], fc, ranges))
        return TensorBlocks{blocks->type, blocks->bytes.subspan(rows->first * row_bytes, rows->count * row_bytes),
                            blocks->owner};
      const auto cols = axis_slice(t.row->shape[1], fc, ranges);
      if (!cols) return blocks;
      if (cols->first % traits->block_size != 0 || cols->count % traits->block_size != 0) return std::nullopt;
      const size_t first = cols->first / traits->block_size * traits->block_bytes;
      const size_t part_bytes = cols->count / traits->block_size * traits->block_bytes;
      auto gathered = std::make_shared<std::vector<std::byte>>(n_rows * part_bytes);
      for (size_t i = 0; i < n_rows; ++i)
        std::memcpy(gathered->data() + i * part_bytes, blocks->bytes.data() + i * row_bytes + first, part_bytes);
      if (source->release_blocks) source->release_blocks(*blocks);  // the file's pages are not needed again
      return TensorBlocks{blocks->type, std::span<const std::byte>(*gathered), gathered};
    };
  }
  if (full.release_blocks) {
    out.release_blocks = [source](const TensorBlocks& done) {
      if (!done.owner) source->release_blocks(done);  // the file's own bytes (a row slice); gathered ones go with their owner
    };
  }
  return out;
}

}  // namespace astrai
