// PageCache: admission with prefix hits, growth, prefix registration, release.
#include "engine/kv_cache/page_cache.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace astrai {

namespace {

int pages_for(int n_tokens, int page_size) { return (n_tokens + page_size - 1) / page_size; }

}  // namespace

PageCache::PageCache(const ModelConfig& config, int n_pages, int page_size, PrefixHash hash)
    : max_seq_len_(config.max_seq_len),
      pool_(n_pages, page_size, std::move(hash)),
      storage_(config, n_pages, page_size),
      view_(storage_, tasks_, pool_) {}

void PageCache::check_length(int n_tokens, const char* what) const {
  if (n_tokens < 1 || n_tokens > max_seq_len_)
    throw std::invalid_argument(std::string("PageCache: ") + what + " of " + std::to_string(n_tokens) +
                                " tokens is outside [1, max_seq_len=" + std::to_string(max_seq_len_) + "]");
}

PageCache::PrefixPlan PageCache::plan_admission(std::span<const int> prompt) const {
  const int len = int(prompt.size());
  PrefixPlan plan;
  // At most floor((len - 1) / P) pages: the last prompt token is always computed.
  plan.hit_pages = pool_.match(prompt, (len - 1) / page_size());
  plan.new_pages = pages_for(len, page_size()) - int(plan.hit_pages.size());
  // Sharing a cached hit page takes it off the LRU list, out of the allocatable pages.
  const int revived = int(std::count_if(plan.hit_pages.begin(), plan.hit_pages.end(), [&](int page) {
    return pool_.allocator().state(page) == PageState::Cached;
  }));
  plan.short_by = std::max(0, plan.new_pages - (pool_.n_available() - revived));
  return plan;
}

int PageCache::pages_short_for(std::span<const int> prompt) const {
  check_length(int(prompt.size()), "a prompt");
  return plan_admission(prompt).short_by;
}

std::optional<int> PageCache::admit(int task_id, std::span<const int> prompt) {
  if (tasks_.contains(task_id))
    throw std::invalid_argument("PageCache: task " + std::to_string(task_id) + " is already admitted");
  check_length(int(prompt.size()), "a prompt");
  const PrefixPlan plan = plan_admission(prompt);
  if (plan.short_by > 0) return std::nullopt;

  TaskPages task;
  // Share the hits first so that allocating the new pages cannot evict them.
  for (const int page : plan.hit_pages) pool_.share(page);
  task.pages = plan.hit_pages;
  for (int i = 0; i < plan.new_pages; ++i) task.pages.push_back(pool_.allocate().value());
  task.n_cached_tokens = int(plan.hit_pages.size()) * page_size();
  task.n_registered_pages = int(plan.hit_pages.size());
  return tasks_.add(task_id, std::move(task)).n_cached_tokens;
}

bool PageCache::reserve(int task_id, int n_tokens) {
  TaskPages& task = tasks_.at(task_id);
  check_length(n_tokens, "a reservation");
  const int missing = pages_for(n_tokens, page_size()) - int(task.pages.size());
  if (missing <= 0) return true;
  if (missing > pool_.n_available()) return false;
  for (int i = 0; i < missing; ++i) task.pages.push_back(pool_.allocate().value());
  return true;
}

void PageCache::commit(int task_id, std::span<const int> tokens_so_far) {
  TaskPages& task = tasks_.at(task_id);
  const int n = int(tokens_so_far.size());
  const int reserved = int(task.pages.size()) * page_size();
  if (n > reserved || n < task.n_cached_tokens)
    throw std::invalid_argument("PageCache: commit of " + std::to_string(n) + " tokens for task " +
                                std::to_string(task_id) + ", which has " + std::to_string(task.n_cached_tokens) +
                                " committed and " + std::to_string(reserved) + " reserved");
  task.n_cached_tokens = n;
  // Register full pages in order; each one's parent is the page before it.
  // A page duplicating a prefix registered meanwhile by another task stays
  // private, and so do all later pages of this task (their parent is private).
  const int full_pages = n / page_size();
  while (task.registering && task.n_registered_pages < full_pages) {
    const int i = task.n_registered_pages;
    const int parent = i == 0 ? -1 : task.pages[size_t(i - 1)];
    const auto page_tokens = tokens_so_far.subspan(size_t(i) * size_t(page_size()), size_t(page_size()));
    if (!pool_.register_page(task.pages[size_t(i)], parent, page_tokens)) {
      task.registering = false;
      break;
    }
    ++task.n_registered_pages;
  }
}

void PageCache::release(int task_id) {
  const TaskPages& task = tasks_.at(task_id);
  // Last page first: of a released chain the deepest pages become the least
  // recently used, so eviction trims prefixes from their ends.
  for (auto page = task.pages.rbegin(); page != task.pages.rend(); ++page) pool_.release(*page);
  tasks_.erase(task_id);
}

KVCacheStats PageCache::stats() const {
  const PageAllocator& allocator = pool_.allocator();
  KVCacheStats s;
  s.block_tokens = page_size();
  s.blocks_total = allocator.n_pages();
  s.blocks_held = allocator.n_held();
  s.blocks_cached = allocator.n_cached();
  s.blocks_free = allocator.n_free();
  s.tasks = tasks_.size();
  return s;
}

void PageCache::check_invariants() const {
  pool_.check_invariants();
  std::map<int, int> listed;  // page -> number of page tables listing it
  for (const auto& [task_id, task] : tasks_.all()) {
    if (task.n_registered_pages > int(task.pages.size()) || task.n_cached_tokens > int(task.pages.size()) * page_size())
      throw std::logic_error("PageCache invariant broken: task " + std::to_string(task_id) + " counts past its pages");
    for (const int page : task.pages) ++listed[page];
  }
  for (int page = 0; page < n_pages(); ++page) {
    const int refs = listed.count(page) ? listed.at(page) : 0;
    if (pool_.allocator().ref_count(page) != refs)
      throw std::logic_error("PageCache invariant broken: page " + std::to_string(page) + " has " +
                             std::to_string(pool_.allocator().ref_count(page)) + " references but " +
                             std::to_string(refs) + " page tables list it");
    if (refs > 1 && !pool_.is_registered(page))
      throw std::logic_error("PageCache invariant broken: unregistered page " + std::to_string(page) +
                             " is shared by " + std::to_string(refs) + " tasks");
  }
}

}  // namespace astrai
