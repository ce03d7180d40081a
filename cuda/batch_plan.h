// The host-side plan of one forward batch on the GPU: which page-table row,
// cache slot and attention kernel each batch row uses. Pure host code, built
// and checked before anything is launched, so bad input is a clear exception
// and never a device fault.
//
// Attention routing depends only on a row's own sequence: a sequence with
// one row in the batch is a decode row; the rows of a sequence with several
// are cut, in batch order, into prefill tiles of kPrefillTileRows rows.
//
// Attention's split partials (o_partial, lse_partial) are kept for few rows
// at a time: the decode rows, then the prefill tiles in chunks of at most
// `chunk_rows` rows, each chunk merged before the next one reuses the
// space. A row's partials sit at its row_partial index: decode rows
// 0..D-1, each chunk's rows D.. in tile order. So the scratch is
// partial_rows = D + (largest chunk) rows whatever the prefill's length.
#pragma once

#include <span>
#include <vector>

#include "engine/kv_cache/page_manager.h"
#include "engine/kv_cache/window_page_manager.h"
#include "reference/batch.h"
#include "reference/model_config.h"

namespace astrai::cuda {

struct BatchPlan {
  int rows = 0;
  int n_seqs = 0;            // distinct sequences, in order of first appearance
  int pages_per_seq = 0;     // columns of page_tables
  std::vector<int> tokens;   // [rows]
  std::vector<int> row_pos;  // [rows]
  std::vector<int> row_seq;  // [rows]: page-table row
  std::vector<int> row_slot; // [rows]: page * page_size + pos % page_size, where the row's K/V go
  std::vector<int> page_tables;  // [n_seqs, pages_per_seq]; unused entries 0
  // With a sliding pool (the cache's WindowPageManager), the sliding layers'
  // slots and page tables, as the two above (entries the window has passed 0;
  // the kernels never read them). Empty without one.
  std::vector<int> sliding_row_slot;     // [rows]
  std::vector<int> sliding_page_tables;  // [n_seqs, pages_per_seq]
  std::vector<int> decode_rows;  // rows that are their sequence's only row
  std::vector<int> tile_first, tile_count, tile_rows;  // prefill tiles: tile_rows[first .. first + count)
  std::vector<int> wanted_rows;  // rows with want_logits, in batch order
  std::vector<int> row_partial;  // [rows]: the row's index in the attention partials
  std::vector<int> chunk_tiles;  // prefill chunk c is tiles chunk_tiles[c] .. chunk_tiles[c + 1] - 1
  int partial_rows = 0;          // rows of attention partials the batch needs

  int n_chunks() const { return chunk_tiles.empty() ? 0 : int(chunk_tiles.size()) - 1; }
  // The rows of chunk c: tile_rows[chunk_row_begin(c) .. chunk_row_begin(c + 1)).
  int chunk_row_begin(int c) const {
    return c == n_chunks() ? int(tile_rows.size()) : tile_first[size_t(chunk_tiles[size_t(c)])];
  }
  bool decode_only() const { return tile_first.empty(); }
  bool has_sliding() const { return !sliding_row_slot.empty(); }
};

// Checks every row as the reference and PageCacheView do (token and position
// in range: std::invalid_argument; task unknown: std::invalid_argument;
// position outside the task's reserved pages: std::out_of_range; a write into
// a shared prefix page: std::logic_error) and that the rows of one sequence
// have increasing positions (std::invalid_argument). With `sliding` (the
// cache's sliding pool), also where each row's K/V go in the sliding layers,
// and std::logic_error when the pool has given back a page a row's attention
// would read (from the window's first position rounded down to the tile).
BatchPlan plan_batch(std::span<const BatchToken> batch, const PageManager& pages, const ModelConfig& config,
                     int tile_rows, int chunk_rows, const WindowPageManager* sliding = nullptr);

// The batch sizes at which decode steps are captured as CUDA graphs, as vLLM
// captures them: 1, 2, 4, then every multiple of 8 up to 256, then every
// multiple of 16 up to kMaxGraphBatchRows. Every power of two up to the
// largest is one of them, so padding a batch never moves it out of its GEMM
// row-count bucket (gemm.h: 1-64, 65-128, 129-256, 257-512): a real row gets
// the algorithm it gets unpadded. A batch gains at most 15 padding rows.
inline constexpr int kMaxGraphBatchRows = 512;
// The smallest captured size >= rows; rows itself above kMaxGraphBatchRows (and for 0).
int graph_batch_rows(int rows);

// A decode-only plan padded to `rows` rows of which `wanted` want logits,
// for replaying the graph captured at that size. Each padding row is a copy
// of the plan's last row (token, position, sequence), so it computes what
// that row computes and reads only that sequence's pages, but writes its K/V
// into a slot of its own, first_padding_slot + i for padding row i (slots no
// page owns: DevicePageCache::kPaddingSlots), so no page changes and no two
// rows write one slot. Its attention partials get their own index. The real wanted rows stay first in
// wanted_rows; the padding wanted entries are distinct rows (padding rows
// first, then real rows that did not want logits), since the final norm adds
// the residual in place once per listed row. Throws std::invalid_argument
// for a plan with prefill tiles, rows below plan.rows, wanted below its
// wanted rows, wanted above rows, or more padding rows than `padding_slots`.
// A plan with a sliding pool gets the padding rows' sliding slots from
// first_sliding_padding_slot on, as their slots from first_padding_slot.
BatchPlan pad_decode_plan(const BatchPlan& plan, int rows, int wanted, int first_padding_slot, int padding_slots,
                          int first_sliding_padding_slot = 0);

}  // namespace astrai::cuda
