// plan_batch: grouping rows by sequence and addressing their pages.
#include "cuda/batch_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace astrai::cuda {
BatchPlan plan_batch(std::span<const BatchToken> batch, const PageManager& pages, const ModelConfig& config,
                     int tile_rows, int chunk_rows, const WindowPageManager* sliding) {
  if (tile_rows < 1 || chunk_rows < tile_rows)
    throw std::invalid_argument("plan_batch: need 1 <= tile_rows <= chunk_rows");
  check_batch(config, batch);  // reference/batch.h: ids and positions in range
  BatchPlan plan;
  const int p = pages.page_size();
  plan.rows = int(batch.size());
  plan.pages_per_seq = (config.max_seq_len + p - 1) / p;
  std::unordered_map<int, int> seq_index;            // task id -> page-table row
  std::vector<std::vector<int>> rows_of_seq;
  for (int r = 0; r < plan.rows; ++r) {
    const BatchToken& t = batch[size_t(r)];
    auto [it, added] = seq_index.try_emplace(t.seq, int(rows_of_seq.size()));
    if (added) {
      rows_of_seq.emplace_back();
      const auto table = pages.page_table(t.seq);  // throws for an unknown task
      plan.page_tables.resize(plan.page_tables.size() + size_t(plan.pages_per_seq), 0);
      std::copy(table.begin(), table.end(), plan.page_tables.end() - plan.pages_per_seq);
      if (sliding) {
        const auto window_table = sliding->page_table(t.seq);
        plan.sliding_page_tables.resize(plan.sliding_page_tables.size() + size_t(plan.pages_per_seq), 0);
        auto out = plan.sliding_page_tables.end() - plan.pages_per_seq;
        for (const int page : window_table) *out++ = page == WindowPageManager::kDropped ? 0 : page;
      }
    } else if (t.pos <= batch[size_t(rows_of_seq[size_t(it->second)].back())].pos) {
      throw std::invalid_argument("forward: task " + std::to_string(t.seq) + " has position " +
                                  std::to_string(t.pos) + " after a row at a position not below it");
    }
    const int seq = it->second;
    rows_of_seq[size_t(seq)].push_back(r);
    // Throws as PageCacheView does: unknown task, position not reserved, write into a shared page.
    const int page = pages.locate(t.seq, t.pos, true).page;
    plan.tokens.push_back(t.token);
    plan.row_pos.push_back(t.pos);
    plan.row_seq.push_back(seq);
    plan.row_slot.push_back(page * p + t.pos % p);
    if (sliding) {
      plan.sliding_row_slot.push_back(sliding->locate(t.seq, t.pos, true).page * p + t.pos % p);
      // The kernels walk a sliding row from its window's first position
      // rounded down to their tile: the pool must still hold that page (and
      // so every later one: pages are given back from the front only).
      const int first_read = sliding->first_kept(t.pos);
      try {
        sliding->locate(t.seq, first_read, false);
      } catch (const std::out_of_range&) {
        throw std::logic_error("plan_batch: task " + std::to_string(t.seq) + " at position " +
                               std::to_string(t.pos) + " would read position " + std::to_string(first_read) +
                               ", whose sliding page was given back");
      }
    }
    if (t.want_logits) plan.wanted_rows.push_back(r);
  }
  plan.n_seqs = int(rows_of_seq.size());
  for (const auto& rows : rows_of_seq) {
    if (rows.size() == 1) {
      plan.decode_rows.push_back(rows[0]);
      continue;
    }
    for (size_t first = 0; first < rows.size(); first += size_t(tile_rows)) {
      plan.tile_first.push_back(int(plan.tile_rows.size()));
      const size_t count = std::min(rows.size() - first, size_t(tile_rows));
      plan.tile_count.push_back(int(count));
      plan.tile_rows.insert(plan.tile_rows.end(), rows.begin() + long(first), rows.begin() + long(first + count));
    }
  }
  // Partials: decode rows first, then each chunk of whole tiles from index D.
  const int D = int(plan.decode_rows.size());
  plan.row_partial.assign(size_t(plan.rows), -1);
  for (int i = 0; i < D; ++i) plan.row_partial[size_t(plan.decode_rows[size_t(i)])] = i;
  plan.partial_rows = D;
  int chunk_begin_row = 0;
  for (size_t t = 0; t < plan.tile_first.size(); ++t) {
    const int first = plan.tile_first[t], end = first + plan.tile_count[t];
    if (plan.chunk_tiles.empty() || end - chunk_begin_row > chunk_rows) {
      plan.chunk_tiles.push_back(int(t));
      chunk_begin_row = first;
    }
    for (int i = first; i < end; ++i) plan.row_partial[size_t(plan.tile_rows[size_t(i)])] = D + i - chunk_begin_row;
    plan.partial_rows = std::max(plan.partial_rows, D + end - chunk_begin_row);
  }
  if (!plan.chunk_tiles.empty()) plan.chunk_tiles.push_back(int(plan.tile_first.size()));
  return plan;
}

int graph_batch_rows(int rows) {
  if (rows <= 0 || rows > kMaxGraphBatchRows) return rows;
  if (rows <= 4) return rows == 3 ? 4 : rows;
  const int step = rows <= 256 ? 8 : 16;
  return (rows + step - 1) / step * step;
}

BatchPlan pad_decode_plan(const BatchPlan& plan, int rows, int wanted, int first_padding_slot, int padding_slots,
                          int first_sliding_padding_slot) {
  const int real_rows = plan.rows, real_wanted = int(plan.wanted_rows.size());
  if (!plan.decode_only() || real_rows == 0 || rows < real_rows || wanted < real_wanted || wanted > rows ||
      rows - real_rows > padding_slots)
    throw std::invalid_argument("pad_decode_plan: cannot pad a plan of " + std::to_string(real_rows) + " rows (" +
                                std::to_string(real_wanted) + " wanted" +
                                (plan.decode_only() ? "" : ", with prefill tiles") + ") to " + std::to_string(rows) +
                                " rows (" + std::to_string(wanted) + " wanted)");
  BatchPlan padded = plan;
  const size_t src = size_t(real_rows - 1);
  for (int r = real_rows; r < rows; ++r) {
    padded.tokens.push_back(plan.tokens[src]);
    padded.row_pos.push_back(plan.row_pos[src]);
    padded.row_seq.push_back(plan.row_seq[src]);
    padded.row_slot.push_back(first_padding_slot + (r - real_rows));
    if (plan.has_sliding()) padded.sliding_row_slot.push_back(first_sliding_padding_slot + (r - real_rows));
    padded.row_partial.push_back(int(padded.decode_rows.size()));
    padded.decode_rows.push_back(r);
  }
  padded.rows = rows;
  padded.partial_rows = int(padded.decode_rows.size());
  // Extra wanted rows: the padding rows, then real rows that wanted nothing.
  std::vector<bool> listed(size_t(rows), false);
  for (const int r : plan.wanted_rows) listed[size_t(r)] = true;
  for (int r = real_rows; r < rows && int(padded.wanted_rows.size()) < wanted; ++r) padded.wanted_rows.push_back(r);
  for (int r = 0; r < real_rows && int(padded.wanted_rows.size()) < wanted; ++r)
    if (!listed[size_t(r)]) padded.wanted_rows.push_back(r);
  return padded;
}

}  // namespace astrai::cuda
