// The forward pass's window on a PageCache: position `pos` of task `seq`
// lives at offset pos % P of page page_table[pos / P] (P = page size).
//
// Writes into a registered (shareable) page are refused with
// std::logic_error: the prefix-hit rule leaves every position the forward
// pass still has to compute in a page of the task's own, so such a write is
// a caller bug that would corrupt other tasks' prefixes.
#pragma once

#include "engine/kv_cache/page_pool.h"
#include "engine/kv_cache/page_storage.h"
#include "engine/kv_cache/task_table.h"
#include "reference/kv_cache_view.h"

namespace astrai {

class PageCacheView final : public KVCacheView {
 public:
  PageCacheView(PageStorage& storage, const TaskTable& tasks, const PagePool& pool)
      : storage_(storage), tasks_(tasks), pool_(pool) {}

  // Throws std::invalid_argument for an unknown task, std::out_of_range for a
  // layer or a position outside the task's reserved pages.
  void write(int layer, int seq, int pos, const float* key, const float* value) override;
  const float* key(int layer, int seq, int pos) const override;
  const float* value(int layer, int seq, int pos) const override;

 private:
  struct Location {
    int page;
    int offset;
  };
  Location locate(int layer, int seq, int pos) const;

  PageStorage& storage_;
  const TaskTable& tasks_;
  const PagePool& pool_;
};

}  // namespace astrai
