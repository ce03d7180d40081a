// One layer's attention over the paged cache, as the executor and the tests
// launch it: where a BatchPlan's metadata sits in one device int array, the
// kernels' arguments built from it, and the launch sequence (decode rows and
// their merge, then each chunk of prefill tiles and its merge; see the
// partials paragraph of batch_plan.h). The executor and tests/cuda call these
// same functions, so a test exercises exactly the executor's arguments.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/batch_plan.h"
#include "cuda/kernels/kernels.h"
#include "reference/model_config.h"

namespace astrai::cuda {

// Rows of prefill partials kept at once (BatchPlan's chunk_rows).
inline constexpr int kPrefillChunkRows = 256;

// How attention cuts a row's context into splits (split_len_of() in
// kernels/kernels.h): 16 splits a row up to 8k positions (Llama 3 8B: 16 x 8
// KV heads = 128 blocks, about one per SM of an H100/H200, so one sequence
// fills the GPU), then one per 512 positions, at most kSplitsPerRow (131k
// context: 32 splits, 256 blocks); each split at least kMinSplitLen
// positions, so a split's partials (written, then read by the merge) stay
// under an eighth of the K/V it reads (docs/cuda.md, "Decode attention: the
// byte math").
inline constexpr int kSplitsPerRow = 32;
inline constexpr int kMinSplitLen = 2 * kAttentionTile;
// The executor's split parameters for contexts up to max_seq_len: the
// shortest split (a multiple of kAttentionTile), and the most splits a row
// can have, which sizes the partials (attention_partial_floats()) and is the
// cap of split_len_of().
inline int split_len_for(int /*max_seq_len*/) { return kMinSplitLen; }
inline int max_splits_for(int max_seq_len, int min_split_len) {
  const int by_length = (max_seq_len + min_split_len - 1) / min_split_len;  // splits of min_split_len
  const int wanted = splits_wanted(max_seq_len - 1, kSplitsPerRow);           // the longest row's
  const int most = by_length < wanted ? by_length : wanted;
  return most > 0 ? most : 1;
}

// A plan's metadata in one int array of sections, each `capacity` ints (the
// largest batch it was sized for), then table_stride() ints per sequence of
// page tables: its page table, and with `sliding_tables` its sliding layers'
// page table right after (pages_per_seq ints each). pack() writes a plan
// into a host copy of the array; the accessors give a section's place in the
// device copy.
class PlanLayout {
 public:
  enum Section {
    kTokens, kPos, kSeq, kSlot, kSlidingSlot, kPartial, kDecode, kTileFirst, kTileCount, kTileRows, kWanted, kTables
  };

  PlanLayout(int capacity, int pages_per_seq, bool sliding_tables = false)
      : capacity_(capacity), pages_per_seq_(pages_per_seq), sliding_tables_(sliding_tables) {}
  int capacity() const { return capacity_; }
  int pages_per_seq() const { return pages_per_seq_; }
  bool sliding_tables() const { return sliding_tables_; }
  // Ints from one sequence's page table to the next's.
  int table_stride() const { return pages_per_seq_ * (sliding_tables_ ? 2 : 1); }
  // Ints of the whole array, and of its prefix that `plan` uses.
  size_t ints() const { return size_t(kTables) * size_t(capacity_) + size_t(capacity_) * size_t(table_stride()); }
  size_t ints_used(const BatchPlan& plan) const {
    return size_t(kTables) * size_t(capacity_) + size_t(plan.n_seqs) * size_t(table_stride());
  }
  // Whether `plan` fits (rows, pages, and a sliding table where it has one).
  bool fits(const BatchPlan& plan) const {
    return plan.rows <= capacity_ && plan.n_seqs <= capacity_ && plan.pages_per_seq <= pages_per_seq_ &&
           (!plan.has_sliding() || sliding_tables_);
  }
  // Throws std::invalid_argument when the plan is larger than the layout.
  void pack(const BatchPlan& plan, int* host) const;
  const int* at(const int* device, Section s) const { return device + size_t(s) * size_t(capacity_); }

 private:
  int capacity_, pages_per_seq_;
  bool sliding_tables_;
};

// Arguments of the three attention kernels for one layer: queries q (row r,
// head h at q[r * q_stride + h * head_dim]), the layer's cache, the plan's
// metadata in `meta` (laid out by `layout`), the shortest split
// (min_split_len; max_splits_for() gives the most splits) and the partials scratch
// (attention_partial_floats each of o_partial and, / head_dim, lse_partial).
AttentionArgs attention_args(const ModelConfig& m, const float* q, int q_stride, KVLayer kv, int page_size,
                             const PlanLayout& layout, const int* meta, int min_split_len, float* o_partial,
                             float* lse_partial);

// The same arguments for a sliding layer whose rows are in the cache's
// sliding pool: its page tables (those of `a` + pages_per_seq).
AttentionArgs sliding_pool_args(AttentionArgs a, const PlanLayout& layout);

// Floats of o_partial a plan needs (lse_partial needs this / head_dim).
size_t attention_partial_floats(const ModelConfig& m, int partial_rows, int max_splits);

// Decode attention and its merge, then per prefill chunk: prefill attention
// and its merge. out: [rows, q_dim] of out_dtype.
void launch_paged_attention(const AttentionArgs& a, const BatchPlan& plan, const PlanLayout& layout, const int* meta,
                            void* out, DType out_dtype, cudaStream_t stream);

}  // namespace astrai::cuda
