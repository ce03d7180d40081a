// An independent model of PageCache for the stateful test: it knows nothing
// of pages, hashes or page tables, only which token prefixes (multiples of the
// page size) are registered, how many tasks hold each, and the least recently
// used order of the unheld ones. From that it predicts every admit() hit,
// every out-of-room answer and the free/held/cached page counts.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

namespace astrai::test {

class PageCacheModel {
 public:
  using Tokens = std::vector<int>;
  struct Task {
    Tokens tokens;  // tokens whose K/V are in the cache (committed), in order
    int n_pages = 0;
    int n_registered = 0;  // leading pages registered (shared) by this task
    bool registering = true;
  };

  PageCacheModel(int n_pages, int page_size) : n_pages_(n_pages), page_size_(page_size) {}

  int n_cached() const { return int(lru_.size()); }
  int n_held() const {
    int held = n_private_;
    for (const auto& [prefix, holders] : holders_) held += holders > 0;
    return held;
  }
  int n_free() const { return n_pages_ - n_held() - n_cached(); }
  const std::map<int, Task>& tasks() const { return tasks_; }

  // Hit: the longest registered run of full pages, at most (len - 1) / P of them.
  std::optional<int> admit(int task_id, const Tokens& prompt) {
    const int len = int(prompt.size());
    int hit_pages = 0;
    while (hit_pages < (len - 1) / page_size_ && holders_.count(prefix(prompt, hit_pages + 1))) ++hit_pages;
    const int new_pages = pages_for(len) - hit_pages;
    int revived = 0;
    for (int i = 1; i <= hit_pages; ++i) revived += holders_.at(prefix(prompt, i)) == 0;
    if (new_pages > n_free() + n_cached() - revived) return std::nullopt;
    for (int i = 1; i <= hit_pages; ++i) hold(prefix(prompt, i));
    for (int i = 0; i < new_pages; ++i) take_page();
    tasks_[task_id] = Task{prefix(prompt, hit_pages), pages_for(len), hit_pages, true};
    return hit_pages * page_size_;
  }

  bool reserve(int task_id, int n_tokens) {
    Task& task = tasks_.at(task_id);
    const int missing = pages_for(n_tokens) - task.n_pages;
    if (missing <= 0) return true;
    if (missing > n_free() + n_cached()) return false;
    for (int i = 0; i < missing; ++i) take_page();
    task.n_pages += missing;
    return true;
  }

  // Full pages become registered prefixes in order, until one is already registered.
  void commit(int task_id, const Tokens& tokens) {
    Task& task = tasks_.at(task_id);
    task.tokens = tokens;
    while (task.registering && task.n_registered < int(tokens.size()) / page_size_) {
      const Tokens p = prefix(tokens, task.n_registered + 1);
      if (holders_.count(p)) {
        task.registering = false;
        break;
      }
      holders_[p] = 1;
      --n_private_;
      ++task.n_registered;
    }
  }

  // Registered pages go to the LRU list deepest first; private pages are freed.
  void release(int task_id) {
    const Task& task = tasks_.at(task_id);
    for (int i = task.n_registered; i >= 1; --i) {
      const Tokens p = prefix(task.tokens, i);
      if (--holders_.at(p) == 0) lru_.push_back(p);
    }
    n_private_ -= task.n_pages - task.n_registered;
    tasks_.erase(task_id);
  }

 private:
  int pages_for(int n_tokens) const { return (n_tokens + page_size_ - 1) / page_size_; }
  Tokens prefix(const Tokens& tokens, int n_pages) const {
    return Tokens(tokens.begin(), tokens.begin() + size_t(n_pages) * size_t(page_size_));
  }
  void hold(const Tokens& p) {
    if (holders_.at(p)++ == 0) std::erase(lru_, p);
  }
  // A new private page: a free one, else evict the oldest cached prefix and
  // every registered extension of it (all of them unheld).
  void take_page() {
    if (n_free() == 0) {
      const Tokens victim = lru_.front();
      for (auto it = holders_.begin(); it != holders_.end();) {
        const Tokens& p = it->first;
        if (p.size() >= victim.size() && std::equal(victim.begin(), victim.end(), p.begin())) {
          if (it->second != 0) throw std::logic_error("model: evicting a held prefix");
          std::erase(lru_, p);
          it = holders_.erase(it);
        } else {
          ++it;
        }
      }
    }
    ++n_private_;
  }

  int n_pages_;
  int page_size_;
  std::map<Tokens, int> holders_;  // registered prefix -> tasks holding its page
  std::vector<Tokens> lru_;        // unheld registered prefixes, least recently used first
  int n_private_ = 0;              // held pages that are not registered
  std::map<int, Task> tasks_;
};

}  // namespace astrai::test
