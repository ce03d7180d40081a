// TaskTable: task id -> page table.
#include "engine/kv_cache/task_table.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace astrai {

TaskPages& TaskTable::add(int task_id, TaskPages pages) {
  const auto [it, added] = tasks_.emplace(task_id, std::move(pages));
  if (!added) throw std::invalid_argument("PageCache: task " + std::to_string(task_id) + " is already admitted");
  return it->second;
}

TaskPages& TaskTable::at(int task_id) { return const_cast<TaskPages&>(std::as_const(*this).at(task_id)); }

const TaskPages& TaskTable::at(int task_id) const {
  const TaskPages* pages = find(task_id);
  if (!pages) throw std::invalid_argument("PageCache: task " + std::to_string(task_id) + " is not admitted");
  return *pages;
}

const TaskPages* TaskTable::find(int task_id) const {
  const auto it = tasks_.find(task_id);
  return it == tasks_.end() ? nullptr : &it->second;
}

}  // namespace astrai
