// WindowPageManager: the sliding layers' pages, dropped as the window moves,
// shared by prefix hits through the full layers' pages (tags).
#include "engine/kv_cache/window_page_manager.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace astrai {

namespace {

int pages_spanning(int n_tokens, int page_size) { return (n_tokens + page_size - 1) / page_size; }
std::string task_label(int task_id) { return "task " + std::to_string(task_id); }
std::string sliding_page_name(int page) { return "sliding page " + std::to_string(page); }

}  // namespace

WindowPageManager::WindowPageManager(int max_seq_len, int n_pages, int page_size, int window, int align)
    : max_seq_len_(max_seq_len), page_size_(page_size), window_(window), align_(align), lru_(std::max(n_pages, 0)) {
  auto at_least_one = [](int value, const char* name) {
    if (value < 1)
      throw std::invalid_argument(std::string("WindowPageManager: ") + name + " must be at least 1, got " +
                                  std::to_string(value));
  };
  at_least_one(max_seq_len, "max_seq_len");
  at_least_one(n_pages, "n_pages");
  at_least_one(page_size, "page_size");
  at_least_one(window, "window");
  at_least_one(align, "align");
  pages_.resize(size_t(n_pages));
  n_free_ = n_pages;
}

int WindowPageManager::first_kept(int n) const { return std::max(0, n - window_ + 1) / align_ * align_; }

int WindowPageManager::window_pages(int window, int page_size, int align) {
  // Positions first_kept(n) .. n: at most window + align - 1 of them, which
  // straddle at most one page boundary more than they fill.
  return pages_spanning(window + align - 1, page_size) + 1;
}

// ---- admission ----

std::optional<std::vector<int>> WindowPageManager::hit_pages(std::span<const int> full_hit) const {
  const int h = int(full_hit.size());
  std::vector<int> hit;
  for (int i = first_kept(h * page_size_) / page_size_; i < h; ++i) {
    const auto it = by_tag_.find(full_hit[size_t(i)]);
    if (it == by_tag_.end()) return std::nullopt;
    hit.push_back(it->second);
  }
  return hit;
}

int WindowPageManager::short_by(int len, int hit_tokens, std::span<const int> hit) const {
  const int new_pages = pages_spanning(len, page_size_) - hit_tokens / page_size_;
  // Sharing a cached hit page takes it off the LRU list, out of the allocatable pages.
  const int revived = int(std::count_if(hit.begin(), hit.end(), [&](int p) { return lru_.contains(p); }));
  return std::max(0, new_pages - (n_available() - revived));
}

void WindowPageManager::admit(int task_id, int len, int hit_tokens, std::span<const int> hit) {
  Task t;
  const int hit_pages = hit_tokens / page_size_;
  t.n_dropped = hit_pages - int(hit.size());
  t.pages.assign(size_t(t.n_dropped), kDropped);
  // Share the hits first so that allocating the new pages cannot evict them.
  for (const int page : hit) {
    share(page);
    t.pages.push_back(page);
  }
  for (int i = hit_pages; i < pages_spanning(len, page_size_); ++i) t.pages.push_back(allocate());
  t.n_committed = hit_tokens;
  t.n_tag_checked = hit_pages;  // the hit pages are tagged already
  tasks_.emplace(task_id, std::move(t));
}

// ---- growth, forks, commits ----

void WindowPageManager::check_length(int n_tokens) const {
  if (n_tokens < 1 || n_tokens > max_seq_len_)
    throw std::invalid_argument("PageCache: a reservation of " + std::to_string(n_tokens) +
                                " tokens is outside [1, max_seq_len=" + std::to_string(max_seq_len_) + "]");
}

std::vector<int> WindowPageManager::pages_to_copy(const Task& t, int n_tokens) const {
  std::vector<int> indices;
  const int last = std::min(pages_spanning(n_tokens, page_size_), int(t.pages.size()));
  for (int i = t.n_committed / page_size_; i < last; ++i) {
    const Page& p = pages_[size_t(t.pages[size_t(i)])];
    if (p.ref_count > 1 || p.tag >= 0) indices.push_back(i);
  }
  return indices;
}

int WindowPageManager::pages_missing(const Task& t, int n_tokens) const {
  return std::max(0, pages_spanning(n_tokens, page_size_) - int(t.pages.size()));
}

bool WindowPageManager::can_reserve(int task_id, int n_tokens) const {
  const Task& t = task(task_id);
  check_length(n_tokens);
  return pages_missing(t, n_tokens) + int(pages_to_copy(t, n_tokens).size()) <= n_available();
}

bool WindowPageManager::reserve(int task_id, int n_tokens, std::vector<PageManager::PageCopy>* copies) {
  Task& t = task(task_id);
  check_length(n_tokens);
  const std::vector<int> to_copy = pages_to_copy(t, n_tokens);
  if (!to_copy.empty() && copies == nullptr)
    throw std::logic_error("WindowPageManager: " + task_label(task_id) + " must copy " +
                           std::to_string(to_copy.size()) + " shared pages, but the caller takes no copies");
  const int missing = pages_missing(t, n_tokens);
  if (missing + int(to_copy.size()) > n_available()) return false;
  // Every allocation before any reference is dropped: no eviction can take a
  // page whose rows are still to be copied.
  std::vector<int> replaced;
  for (const int i : to_copy) {
    const int fresh = allocate();
    copies->push_back({t.pages[size_t(i)], fresh});
    replaced.push_back(std::exchange(t.pages[size_t(i)], fresh));
  }
  for (int i = 0; i < missing; ++i) t.pages.push_back(allocate());
  for (const int page : replaced) drop_reference(page);
  // A copy is private: tagged, if ever, when the full layers register it anew.
  if (!to_copy.empty()) t.n_tag_checked = std::min(t.n_tag_checked, to_copy.front());
  return true;
}

bool WindowPageManager::can_fork(int parent_id, int n_tokens) const {
  const Task& parent = task(parent_id);
  if (n_tokens < 1 || n_tokens > parent.n_committed) return false;
  return first_kept(n_tokens) / page_size_ >= parent.n_dropped;
}

void WindowPageManager::fork(int parent_id, int child_id, int n_tokens) {
  const Task& parent = task(parent_id);
  Task child;
  child.n_dropped = first_kept(n_tokens) / page_size_;
  child.pages.assign(size_t(child.n_dropped), kDropped);
  for (int i = child.n_dropped; i < pages_spanning(n_tokens, page_size_); ++i) {
    const int page = parent.pages[size_t(i)];
    share(page);
    child.pages.push_back(page);
  }
  child.n_committed = n_tokens;
  child.n_tag_checked = std::min(parent.n_tag_checked, n_tokens / page_size_);
  tasks_.emplace(child_id, std::move(child));
}

void WindowPageManager::commit(int task_id, int n_tokens, std::span<const int> full_pages, int full_registered) {
  Task& t = task(task_id);
  t.n_committed = n_tokens;
  // Tag the pages whose full-layer twins the full layers have registered.
  for (; t.n_tag_checked < full_registered; ++t.n_tag_checked) {
    const int i = t.n_tag_checked;
    const int page = t.pages[size_t(i)];
    const int full = full_pages[size_t(i)];
    if (page == kDropped || pages_[size_t(page)].tag >= 0 || by_tag_.contains(full)) continue;
    pages_[size_t(page)].tag = full;
    by_tag_.emplace(full, page);
  }
  // Drop, oldest first, the pages no later query of this task reads.
  for (const int keep_from = first_kept(n_tokens) / page_size_; t.n_dropped < keep_from; ++t.n_dropped)
    drop_reference(std::exchange(t.pages[size_t(t.n_dropped)], kDropped));
}

void WindowPageManager::release(int task_id) {
  const Task& t = task(task_id);
  // Last page first, as PageManager: the oldest pages become the least recently used.
  for (auto page = t.pages.rbegin(); page != t.pages.rend(); ++page)
    if (*page != kDropped) drop_reference(*page);
  tasks_.erase(task_id);
}

void WindowPageManager::forget(int full_page) {
  const auto it = by_tag_.find(full_page);
  if (it == by_tag_.end()) return;
  const int page = it->second;
  untag(page);
  if (lru_.contains(page)) {
    lru_.unlink(page);
    pages_[size_t(page)].free = true;
    ++n_free_;
  }
}

void WindowPageManager::reset() {
  while (lru_.oldest() >= 0) forget(pages_[size_t(lru_.oldest())].tag);
}

// ---- rows ----

PageManager::RowAddress WindowPageManager::locate(int task_id, int pos, bool for_write) const {
  const Task& t = task(task_id);
  const int reserved = int(t.pages.size()) * page_size_;
  if (pos < 0 || pos >= reserved)
    throw std::out_of_range("PageCache: position " + std::to_string(pos) + " of " + task_label(task_id) +
                            " is outside its " + std::to_string(reserved) + " reserved positions");
  const int page = t.pages[size_t(pos / page_size_)];
  if (page == kDropped)
    throw std::out_of_range("PageCache: position " + std::to_string(pos) + " of " + task_label(task_id) +
                            " is before its sliding window (" + std::to_string(window_) +
                            " positions), whose pages were given back");
  if (for_write && (pages_[size_t(page)].tag >= 0 || pages_[size_t(page)].ref_count > 1))
    throw std::logic_error("PageCache: position " + std::to_string(pos) + " of " + task_label(task_id) +
                           " lies in " + sliding_page_name(page) +
                           ", which is shared (a prefix page, or held by another task) and never written");
  return {page, pos % page_size_};
}

const WindowPageManager::Task& WindowPageManager::task(int task_id) const {
  const auto it = tasks_.find(task_id);
  if (it == tasks_.end()) throw std::invalid_argument("PageCache: " + task_label(task_id) + " is not admitted");
  return it->second;
}

// ---- page states ----

int WindowPageManager::allocate() {
  if (n_free_ == 0) {
    if (lru_.oldest() < 0) throw std::logic_error("WindowPageManager: allocation with every page held");
    forget(pages_[size_t(lru_.oldest())].tag);  // evicts the least recently used cached page
  }
  // The lowest free page, as PageManager hands them out.
  for (size_t i = 0; i < pages_.size(); ++i) {
    Page& p = pages_[i];
    if (!p.free) continue;
    p.free = false;
    p.ref_count = 1;
    --n_free_;
    return int(i);
  }
  throw std::logic_error("WindowPageManager: the free count and the pages disagree");
}

void WindowPageManager::share(int page) {
  Page& p = pages_[size_t(page)];
  if (lru_.contains(page)) lru_.unlink(page);
  ++p.ref_count;
}

void WindowPageManager::drop_reference(int page) {
  Page& p = pages_[size_t(page)];
  if (--p.ref_count > 0) return;
  if (p.tag >= 0) {
    lru_.push_newest(page);
  } else {
    p.free = true;
    ++n_free_;
  }
}

void WindowPageManager::untag(int page) {
  Page& p = pages_[size_t(page)];
  by_tag_.erase(p.tag);
  p.tag = -1;
}

// ---- inspection ----

KVCacheStats WindowPageManager::stats() const {
  KVCacheStats s;
  s.block_tokens = page_size_;
  s.blocks_total = n_pages();
  s.blocks_cached = lru_.size();
  s.blocks_free = n_free_;
  s.blocks_held = n_pages() - n_free_ - lru_.size();
  s.tasks = int(tasks_.size());
  return s;
}

int WindowPageManager::held_by(int task_id) const {
  const Task& t = task(task_id);
  return int(std::count_if(t.pages.begin(), t.pages.end(), [](int p) { return p != kDropped; }));
}

PageState WindowPageManager::state(int page) const {
  const Page& p = pages_.at(size_t(page));
  return p.free ? PageState::Free : lru_.contains(page) ? PageState::Cached : PageState::Held;
}

void WindowPageManager::check_invariants() const {
  auto fail = [](const std::string& what) { throw std::logic_error("WindowPageManager invariant broken: " + what); };
  std::vector<int> listed(pages_.size(), 0);
  for (const auto& [task_id, t] : tasks_) {
    for (int i = 0; i < int(t.pages.size()); ++i) {
      const int page = t.pages[size_t(i)];
      if ((page == kDropped) != (i < t.n_dropped)) fail(task_label(task_id) + " has a hole in its page table");
      if (page != kDropped) ++listed[size_t(page)];
    }
    if (t.n_dropped > first_kept(t.n_committed) / page_size_)
      fail(task_label(task_id) + " dropped a page its window still reads");
  }
  int free = 0, tagged = 0;
  for (int i = 0; i < n_pages(); ++i) {
    const Page& p = pages_[size_t(i)];
    if (p.ref_count != listed[size_t(i)])
      fail(sliding_page_name(i) + " has " + std::to_string(p.ref_count) + " references but " +
           std::to_string(listed[size_t(i)]) + " page tables list it");
    const bool cached = lru_.contains(i);
    if (p.free && (cached || p.tag >= 0 || p.ref_count != 0)) fail(sliding_page_name(i) + " is free but in use");
    if (cached && (p.ref_count != 0 || p.tag < 0)) fail(sliding_page_name(i) + " is cached but held or untagged");
    if (!p.free && !cached && p.ref_count < 1) fail(sliding_page_name(i) + " is held with no reference");
    free += p.free;
    if (p.tag < 0) continue;
    ++tagged;
    const auto it = by_tag_.find(p.tag);
    if (it == by_tag_.end() || it->second != i) fail(sliding_page_name(i) + " is not found by its tag");
  }
  if (free != n_free_) fail("free count " + std::to_string(n_free_) + " != " + std::to_string(free));
  if (tagged != int(by_tag_.size())) fail("the tag index and the tagged pages disagree");
  lru_.check("WindowPageManager");
}

}  // namespace astrai
