// The executor's and the tests' one way to lay out a plan and launch attention.
#include "cuda/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace astrai::cuda {

void PlanLayout::pack(const BatchPlan& plan, int* host) const {
  if (!fits(plan))
    throw std::invalid_argument("PlanLayout: a plan of " + std::to_string(plan.rows) + " rows and " +
                                std::to_string(plan.pages_per_seq) + " pages per sequence does not fit a layout of " +
                                std::to_string(capacity_) + " rows and " + std::to_string(pages_per_seq_) +
                                (plan.has_sliding() && !sliding_tables_ ? " without sliding tables" : ""));
  const auto put = [&](Section s, const std::vector<int>& v) {
    std::copy(v.begin(), v.end(), host + size_t(s) * size_t(capacity_));
  };
  put(kTokens, plan.tokens);
  put(kPos, plan.row_pos);
  put(kSeq, plan.row_seq);
  put(kSlot, plan.row_slot);
  put(kSlidingSlot, plan.sliding_row_slot);
  put(kPartial, plan.row_partial);
  put(kDecode, plan.decode_rows);
  put(kTileFirst, plan.tile_first);
  put(kTileCount, plan.tile_count);
  put(kTileRows, plan.tile_rows);
  put(kWanted, plan.wanted_rows);
  // Page tables with this layout's row stride (which may exceed the plan's).
  int* tables = host + size_t(kTables) * size_t(capacity_);
  const size_t stride = size_t(table_stride());
  for (int s = 0; s < plan.n_seqs; ++s) {
    std::copy_n(plan.page_tables.begin() + long(s) * plan.pages_per_seq, plan.pages_per_seq,
                tables + size_t(s) * stride);
    if (plan.has_sliding())
      std::copy_n(plan.sliding_page_tables.begin() + long(s) * plan.pages_per_seq, plan.pages_per_seq,
                  tables + size_t(s) * stride + size_t(pages_per_seq_));
  }
}

AttentionArgs sliding_pool_args(AttentionArgs a, const PlanLayout& layout) {
  if (!layout.sliding_tables()) throw std::logic_error("sliding_pool_args: the layout has no sliding page tables");
  a.page_tables += layout.pages_per_seq();
  return a;
}

AttentionArgs attention_args(const ModelConfig& m, const float* q, int q_stride, KVLayer kv, int page_size,
                             const PlanLayout& layout, const int* meta, int min_split_len, float* o_partial,
                             float* lse_partial) {
  AttentionArgs a;
  a.q = q;
  a.q_stride = q_stride;
  a.kv = kv;
  a.page_size = page_size;
  a.page_tables = layout.at(meta, PlanLayout::kTables);
  a.pages_per_seq = layout.table_stride();  // the kernels' stride from one sequence's table to the next
  a.row_seq = layout.at(meta, PlanLayout::kSeq);
  a.row_pos = layout.at(meta, PlanLayout::kPos);
  a.row_partial = layout.at(meta, PlanLayout::kPartial);
  a.n_heads = m.n_heads;
  a.n_kv_heads = m.n_kv_heads;
  a.head_dim = m.head_dim();
  if (min_split_len <= 0 || min_split_len % kAttentionTile != 0)
    throw std::invalid_argument("attention_args: min_split_len " + std::to_string(min_split_len) +
                                " is not a positive multiple of kAttentionTile");
  a.min_split_len = min_split_len;
  a.max_splits = max_splits_for(m.max_seq_len, min_split_len);
  a.scale = m.attention_scale();  // 1 / sqrt(head_dim), or Gemma's query_pre_attn_scalar
  a.o_partial = o_partial;
  a.lse_partial = lse_partial;
  return a;
}

size_t attention_partial_floats(const ModelConfig& m, int partial_rows, int max_splits) {
  return size_t(partial_rows) * size_t(m.n_heads) * size_t(max_splits) * size_t(m.head_dim());
}

void launch_paged_attention(const AttentionArgs& a, const BatchPlan& plan, const PlanLayout& layout, const int* meta,
                            void* out, DType out_dtype, cudaStream_t stream) {
  const int* decode = layout.at(meta, PlanLayout::kDecode);
  const int* tile_first = layout.at(meta, PlanLayout::kTileFirst);
  const int* tile_count = layout.at(meta, PlanLayout::kTileCount);
  const int* tile_rows = layout.at(meta, PlanLayout::kTileRows);
  const int n_decode = int(plan.decode_rows.size());
  launch_decode_attention(a, decode, n_decode, stream);
  launch_attention_merge(a, decode, n_decode, out, out_dtype, stream);
  for (int c = 0; c < plan.n_chunks(); ++c) {
    const int t0 = plan.chunk_tiles[size_t(c)], t1 = plan.chunk_tiles[size_t(c) + 1];
    launch_prefill_attention(a, tile_first + t0, tile_count + t0, tile_rows, t1 - t0, stream);
    const int r0 = plan.chunk_row_begin(c), r1 = plan.chunk_row_begin(c + 1);
    launch_attention_merge(a, tile_rows + r0, r1 - r0, out, out_dtype, stream);
  }
}

}  // namespace astrai::cuda
