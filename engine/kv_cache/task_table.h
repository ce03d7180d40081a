// Per-task bookkeeping of the paged KV cache: each task's page table and how
// far its K/V are cached and registered as shareable prefixes.
#pragma once

#include <unordered_map>
#include <vector>

namespace astrai {

struct TaskPages {
  std::vector<int> pages;      // page table: pages[i] holds positions [i*P, (i+1)*P)
  int n_cached_tokens = 0;     // leading positions whose K/V are in the cache (prefix hit, then commits)
  int n_registered_pages = 0;  // leading pages registered in the prefix cache (shared ones included)
  bool registering = true;     // false once one of its pages duplicated an already registered prefix
};

class TaskTable {
 public:
  // Throws std::invalid_argument when the task is already present.
  TaskPages& add(int task_id, TaskPages pages);
  // Throw std::invalid_argument naming the task when it is absent.
  TaskPages& at(int task_id);
  const TaskPages& at(int task_id) const;
  // nullptr when absent.
  const TaskPages* find(int task_id) const;
  void erase(int task_id) { tasks_.erase(task_id); }
  bool contains(int task_id) const { return tasks_.count(task_id) != 0; }
  int size() const { return int(tasks_.size()); }
  const std::unordered_map<int, TaskPages>& all() const { return tasks_; }

 private:
  std::unordered_map<int, TaskPages> tasks_;
};

}  // namespace astrai
