// PageManager: admission with prefix hits, growth, prefix registration and
// release over the free mask, reference counts, LRU list and prefix index.
#include "engine/kv_cache/page_manager.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>
#include <utility>

#include "reference/splitmix64.h"

namespace astrai {

namespace {

int pages_for(int n_tokens, int page_size) { return (n_tokens + page_size - 1) / page_size; }
std::string page_name(int page) { return "page " + std::to_string(page); }
std::string task_name(int task_id) { return "task " + std::to_string(task_id); }

}  // namespace

uint64_t default_prefix_hash(uint64_t parent_hash, std::span<const int> page_tokens) {
  uint64_t h = parent_hash;
  for (const int token : page_tokens) h = splitmix64_mix(h + kSplitmix64Gamma + uint32_t(token));
  return h;
}

PageManager::PageManager(int max_seq_len, int n_pages, int page_size, PrefixHash hash)
    : max_seq_len_(max_seq_len), page_size_(page_size), hash_(std::move(hash)), lru_(std::max(n_pages, 0)) {
  auto at_least_one = [](int value, const char* name) {
    if (value < 1)
      throw std::invalid_argument(std::string("PageManager: ") + name + " must be at least 1, got " +
                                  std::to_string(value));
  };
  at_least_one(max_seq_len, "max_seq_len");
  at_least_one(n_pages, "n_pages");
  at_least_one(page_size, "page_size");
  if (!hash_) throw std::invalid_argument("PageManager: the prefix hash function is empty");
  pages_.resize(size_t(n_pages));
  free_mask_.assign((size_t(n_pages) + 63) / 64, 0);
  for (int p = 0; p < n_pages; ++p) set_free(p, true);
  n_free_ = n_pages;
}

// ---- the KVCache life cycle ----

std::optional<int> PageManager::admit(int task_id, std::span<const int> prompt, int max_hit_pages) {
  if (has_task(task_id)) throw std::invalid_argument("PageCache: " + task_name(task_id) + " is already admitted");
  check_length(int(prompt.size()), "a prompt");
  const AdmissionPlan plan = plan_admission(prompt, max_hit_pages);
  if (plan.short_by > 0) return std::nullopt;

  Task t;
  // Share the hits first so that allocating the new pages cannot evict them.
  for (const int page : plan.hit_pages) share(page);
  t.pages = plan.hit_pages;
  for (int i = 0; i < plan.new_pages; ++i) t.pages.push_back(allocate());
  t.n_cached_tokens = int(plan.hit_pages.size()) * page_size_;
  t.n_registered_pages = int(plan.hit_pages.size());
  tasks_.emplace(task_id, std::move(t));
  return int(plan.hit_pages.size()) * page_size_;
}

std::vector<int> PageManager::prefix_hit(std::span<const int> prompt) const {
  // At most floor((len - 1) / P) pages: the last prompt token is always computed.
  return match(prompt, (int(prompt.size()) - 1) / page_size_);
}

PageManager::AdmissionPlan PageManager::plan_admission(std::span<const int> prompt, int max_hit_pages) const {
  const int len = int(prompt.size());
  AdmissionPlan plan;
  plan.hit_pages = match(prompt, std::min((len - 1) / page_size_, max_hit_pages));
  plan.new_pages = pages_for(len, page_size_) - int(plan.hit_pages.size());
  // Sharing a cached hit page takes it off the LRU list, out of the allocatable pages.
  const int revived = int(std::count_if(plan.hit_pages.begin(), plan.hit_pages.end(),
                                        [&](int page) { return lru_.contains(page); }));
  plan.short_by = std::max(0, plan.new_pages - (n_available() - revived));
  return plan;
}

int PageManager::pages_short_for(std::span<const int> prompt, int max_hit_pages) const {
  check_length(int(prompt.size()), "a prompt");
  return plan_admission(prompt, max_hit_pages).short_by;
}

bool PageManager::reserve(int task_id, int n_tokens, std::vector<PageCopy>* copies) {
  Task& t = task(task_id);
  check_length(n_tokens, "a reservation");
  const std::vector<int> to_copy = pages_to_copy(t, t.n_cached_tokens, n_tokens);
  if (!to_copy.empty() && copies == nullptr)
    throw std::logic_error("PageManager: " + task_name(task_id) + " must copy " + std::to_string(to_copy.size()) +
                           " shared pages before writing, but the caller takes no copies");
  const int missing = std::max(0, pages_for(n_tokens, page_size_) - int(t.pages.size()));
  if (missing + int(to_copy.size()) > n_available()) return false;
  // Allocate every page before dropping any reference, so that no allocation
  // can evict a page whose rows are still to be copied.
  std::vector<int> replaced;
  for (const int i : to_copy) {
    const int fresh = allocate();
    copies->push_back({t.pages[size_t(i)], fresh});
    replaced.push_back(std::exchange(t.pages[size_t(i)], fresh));
  }
  for (int i = 0; i < missing; ++i) t.pages.push_back(allocate());
  for (const int page : replaced) drop_reference(page);
  // A copied page is private: it is registered, if ever, when it fills up
  // (registering a copy of a registered page would duplicate its prefix).
  if (!to_copy.empty()) t.n_registered_pages = std::min(t.n_registered_pages, to_copy.front());
  return true;
}

std::vector<int> PageManager::pages_to_copy(const Task& t, int from, int to) const {
  std::vector<int> indices;
  const int last = std::min(pages_for(to, page_size_), int(t.pages.size()));
  for (int i = from / page_size_; i < last; ++i) {
    const Page& p = pages_[size_t(t.pages[size_t(i)])];
    if (p.ref_count > 1 || p.registered) indices.push_back(i);
  }
  return indices;
}

void PageManager::fork(int parent_id, int child_id, int n_tokens) {
  if (has_task(child_id)) throw std::invalid_argument("PageCache: " + task_name(child_id) + " is already admitted");
  const Task& parent = task(parent_id);
  if (n_tokens < 1 || n_tokens > parent.n_cached_tokens)
    throw std::invalid_argument("PageCache: a fork of " + std::to_string(n_tokens) + " tokens from " +
                                task_name(parent_id) + ", which has " + std::to_string(parent.n_cached_tokens) +
                                " committed");
  Task child;
  child.pages.assign(parent.pages.begin(), parent.pages.begin() + pages_for(n_tokens, page_size_));
  for (const int page : child.pages) share(page);
  child.n_cached_tokens = n_tokens;
  child.n_registered_pages = std::min(parent.n_registered_pages, n_tokens / page_size_);
  child.registering = parent.registering;
  tasks_.emplace(child_id, std::move(child));
}

void PageManager::commit(int task_id, std::span<const int> tokens_so_far) {
  Task& t = task(task_id);
  const int n = int(tokens_so_far.size());
  const int reserved = int(t.pages.size()) * page_size_;
  if (n > reserved || n < t.n_cached_tokens)
    throw std::invalid_argument("PageCache: commit of " + std::to_string(n) + " tokens for " + task_name(task_id) +
                                ", which has " + std::to_string(t.n_cached_tokens) + " committed and " +
                                std::to_string(reserved) + " reserved");
  t.n_cached_tokens = n;
  // Register full pages in order; each one's parent is the page before it.
  // A page duplicating a prefix registered meanwhile by another task stays
  // private, and so do all later pages of this task (their parent is private).
  const int full_pages = n / page_size_;
  const int first_new = t.n_registered_pages;
  while (t.registering && t.n_registered_pages < full_pages) {
    const int i = t.n_registered_pages;
    const int parent = i == 0 ? -1 : t.pages[size_t(i - 1)];
    const auto page_tokens = tokens_so_far.subspan(size_t(i) * size_t(page_size_), size_t(page_size_));
    if (!register_page(t.pages[size_t(i)], parent, page_tokens)) {
      t.registering = false;
      break;
    }
    ++t.n_registered_pages;
  }
  // The pages just registered are one chain: one event, as vLLM reports a
  // request's newly full blocks.
  if (recording_ && t.n_registered_pages > first_new) {
    KVBlockStored stored;
    if (first_new > 0) stored.parent_block_hash = pages_[size_t(t.pages[size_t(first_new - 1)])].hash;
    for (int i = first_new; i < t.n_registered_pages; ++i)
      stored.block_hashes.push_back(pages_[size_t(t.pages[size_t(i)])].hash);
    const auto chain = tokens_so_far.subspan(size_t(first_new) * size_t(page_size_),
                                             size_t(t.n_registered_pages - first_new) * size_t(page_size_));
    stored.token_ids.assign(chain.begin(), chain.end());
    record(std::move(stored));
  }
}

void PageManager::release(int task_id) {
  const Task& t = task(task_id);
  // Last page first: of a released chain the deepest pages become the least
  // recently used, so eviction trims prefixes from their ends.
  for (auto page = t.pages.rbegin(); page != t.pages.rend(); ++page) drop_reference(*page);
  tasks_.erase(task_id);
}

bool PageManager::reset_prefix_cache() {
  if (!tasks_.empty()) return false;
  // No task: every page is free or cached, and every registered page cached.
  while (lru_.oldest() >= 0) {
    const int page = lru_.oldest();
    lru_.unlink(page);
    Page& p = pages_[size_t(page)];
    p.registered = false;
    p.parent = -1;
    p.n_children = 0;
    p.tokens.clear();
    set_free(page, true);
  }
  by_hash_.clear();
  record(KVAllBlocksCleared{});
  return true;
}

void PageManager::record_events(bool on) {
  recording_ = on;
  if (!on) events_.clear();
}

void PageManager::record(KVCacheEvent event) {
  if (recording_) events_.push_back(std::move(event));
}

std::vector<KVCachedBlock> PageManager::registered_blocks() const {
  // Depth first from the first pages: a parent is listed before its children.
  std::vector<std::vector<int>> children(pages_.size());
  std::vector<int> stack;
  for (int i = 0; i < n_pages(); ++i) {
    const Page& p = pages_[size_t(i)];
    if (!p.registered) continue;
    if (p.parent == -1)
      stack.push_back(i);
    else
      children[size_t(p.parent)].push_back(i);
  }
  std::vector<KVCachedBlock> blocks;
  while (!stack.empty()) {
    const int page = stack.back();
    stack.pop_back();
    const Page& p = pages_[size_t(page)];
    KVCachedBlock block{p.hash, std::nullopt, p.tokens};
    if (p.parent != -1) block.parent_block_hash = pages_[size_t(p.parent)].hash;
    blocks.push_back(std::move(block));
    stack.insert(stack.end(), children[size_t(page)].begin(), children[size_t(page)].end());
  }
  return blocks;
}

KVCacheStats PageManager::stats() const {
  KVCacheStats s;
  s.block_tokens = page_size_;
  s.blocks_total = n_pages();
  s.blocks_cached = lru_.size();
  s.blocks_free = n_free_;
  s.blocks_held = n_pages() - n_free_ - lru_.size();
  s.tasks = int(tasks_.size());
  return s;
}

PageManager::RowAddress PageManager::locate(int task_id, int pos, bool for_write) const {
  const Task& t = task(task_id);
  const int reserved = int(t.pages.size()) * page_size_;
  if (pos < 0 || pos >= reserved)
    throw std::out_of_range("PageCache: position " + std::to_string(pos) + " of " + task_name(task_id) +
                            " is outside its " + std::to_string(reserved) + " reserved positions");
  const RowAddress at{t.pages[size_t(pos / page_size_)], pos % page_size_};
  if (for_write && pages_[size_t(at.page)].registered)
    throw std::logic_error("PageCache: position " + std::to_string(pos) + " of " + task_name(task_id) +
                           " lies in shared prefix page " + std::to_string(at.page) +
                           ", which is never written again (the forward pass must start at the prefix hit)");
  if (for_write && pages_[size_t(at.page)].ref_count > 1)
    throw std::logic_error("PageCache: position " + std::to_string(pos) + " of " + task_name(task_id) +
                           " lies in page " + std::to_string(at.page) + ", which " +
                           std::to_string(pages_[size_t(at.page)].ref_count - 1) +
                           " other tasks hold (reserve() copies a shared page before it is written)");
  return at;
}

const PageManager::Task& PageManager::task(int task_id) const {
  const auto it = tasks_.find(task_id);
  if (it == tasks_.end()) throw std::invalid_argument("PageCache: " + task_name(task_id) + " is not admitted");
  return it->second;
}

void PageManager::check_length(int n_tokens, const char* what) const {
  if (n_tokens < 1 || n_tokens > max_seq_len_)
    throw std::invalid_argument(std::string("PageCache: ") + what + " of " + std::to_string(n_tokens) +
                                " tokens is outside [1, max_seq_len=" + std::to_string(max_seq_len_) + "]");
}

// ---- the prefix index ----

std::optional<int> PageManager::find(uint64_t hash, int parent, std::span<const int> tokens) const {
  const auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const Page& page = pages_[size_t(it->second)];
    if (page.parent == parent && std::ranges::equal(tokens, page.tokens)) return it->second;
  }
  return std::nullopt;
}

// The pages holding the longest registered prefix of `tokens`, at most max_pages.
std::vector<int> PageManager::match(std::span<const int> tokens, int max_pages) const {
  std::vector<int> hit;
  const size_t n_full = std::min(tokens.size() / size_t(page_size_), size_t(std::max(max_pages, 0)));
  uint64_t hash = kRootPrefixHash;
  int parent = -1;
  for (size_t i = 0; i < n_full; ++i) {
    const std::span<const int> chunk = tokens.subspan(i * size_t(page_size_), size_t(page_size_));
    hash = hash_(hash, chunk);
    const std::optional<int> page = find(hash, parent, chunk);
    if (!page) break;
    hit.push_back(*page);
    parent = *page;
  }
  return hit;
}

// Registers Held `page` as holding `page_tokens` after `parent` (-1: a first
// page); false, changing nothing, when that prefix is registered on another page.
bool PageManager::register_page(int page, int parent, std::span<const int> page_tokens) {
  const uint64_t hash = hash_(parent == -1 ? kRootPrefixHash : pages_[size_t(parent)].hash, page_tokens);
  if (find(hash, parent, page_tokens)) return false;
  Page& p = pages_[size_t(page)];
  p.registered = true;
  p.hash = hash;
  p.parent = parent;
  p.tokens.assign(page_tokens.begin(), page_tokens.end());
  if (parent != -1) ++pages_[size_t(parent)].n_children;
  by_hash_.emplace(hash, page);
  return true;
}

void PageManager::unregister(int page) {
  Page& p = pages_[size_t(page)];
  // See "Eviction order" in the header: the descendants of a cached page are
  // evicted before it, so a page with registered children is never evicted.
  if (p.n_children != 0)
    throw std::logic_error("PageManager: evicting " + page_name(page) + " would orphan the " +
                           std::to_string(p.n_children) + " pages registered after it");
  if (p.parent != -1) --pages_[size_t(p.parent)].n_children;
  record(KVBlockRemoved{{p.hash}});
  const auto [first, last] = by_hash_.equal_range(p.hash);
  for (auto it = first; it != last; ++it) {
    if (it->second == page) {
      by_hash_.erase(it);
      break;
    }
  }
  p.registered = false;
  p.parent = -1;
  p.tokens.clear();
  if (unregister_listener_) unregister_listener_(page);
}

// ---- page states ----

int PageManager::allocate() {
  if (n_free_ == 0) {
    if (lru_.oldest() < 0) throw std::logic_error("PageManager: allocation with every page held");
    const int victim = lru_.oldest();
    lru_.unlink(victim);
    unregister(victim);
    set_free(victim, true);
  }
  for (size_t word = 0; word < free_mask_.size(); ++word) {
    if (free_mask_[word] == 0) continue;
    const int page = int(word * 64) + std::countr_zero(free_mask_[word]);  // the lowest free page
    set_free(page, false);
    pages_[size_t(page)].ref_count = 1;
    return page;
  }
  throw std::logic_error("PageManager: the free count and the free mask disagree");
}

void PageManager::share(int page) {
  Page& p = pages_[size_t(page)];
  if (lru_.contains(page)) lru_.unlink(page);
  ++p.ref_count;
}

void PageManager::drop_reference(int page) {
  Page& p = pages_[size_t(page)];
  if (--p.ref_count > 0) return;
  if (p.registered)
    lru_.push_newest(page);
  else
    set_free(page, true);
}

void PageManager::set_free(int page, bool free) {
  const uint64_t bit = uint64_t(1) << (page % 64);
  if (free) {
    free_mask_[size_t(page) / 64] |= bit;
    ++n_free_;
  } else {
    free_mask_[size_t(page) / 64] &= ~bit;
    --n_free_;
  }
}

// ---- inspection ----

void PageManager::check_page(int page) const {
  if (page < 0 || page >= n_pages())
    throw std::invalid_argument("PageManager: " + page_name(page) + " is outside [0, " + std::to_string(n_pages()) +
                                ")");
}

PageState PageManager::state(int page) const {
  check_page(page);
  if (is_free(page)) return PageState::Free;
  return lru_.contains(page) ? PageState::Cached : PageState::Held;
}

int PageManager::ref_count(int page) const {
  check_page(page);
  return pages_[size_t(page)].ref_count;
}

bool PageManager::is_registered(int page) const {
  check_page(page);
  return pages_[size_t(page)].registered;
}

void PageManager::check_invariants() const {
  auto fail = [](const std::string& what) { throw std::logic_error("PageManager invariant broken: " + what); };
  std::vector<int> listed(pages_.size(), 0);  // page tables listing each page
  for (const auto& [task_id, t] : tasks_) {
    if (t.n_registered_pages > int(t.pages.size()) || t.n_cached_tokens > int(t.pages.size()) * page_size_)
      fail(task_name(task_id) + " counts past its pages");
    for (const int page : t.pages) ++listed[size_t(page)];
  }
  std::vector<int> children(pages_.size(), 0);
  int free = 0, registered = 0;
  for (int i = 0; i < n_pages(); ++i) {
    const Page& p = pages_[size_t(i)];
    if (p.ref_count != listed[size_t(i)])
      fail(page_name(i) + " has " + std::to_string(p.ref_count) + " references but " +
           std::to_string(listed[size_t(i)]) + " page tables list it");
    const bool cached_page = lru_.contains(i);
    if (is_free(i) && (cached_page || p.registered || p.ref_count != 0)) fail(page_name(i) + " is free but in use");
    if (cached_page && (p.ref_count != 0 || !p.registered)) fail(page_name(i) + " is cached but held or unregistered");
    if (!is_free(i) && !cached_page && p.ref_count < 1) fail(page_name(i) + " is held with no reference");
    free += is_free(i);
    if (!p.registered) continue;
    ++registered;
    if (int(p.tokens.size()) != page_size_) fail(page_name(i) + " holds a partial page");
    if (p.parent != -1 && !pages_[size_t(p.parent)].registered) fail(page_name(i) + " has an unregistered parent");
    if (p.parent != -1) ++children[size_t(p.parent)];
    const uint64_t parent_hash = p.parent == -1 ? kRootPrefixHash : pages_[size_t(p.parent)].hash;
    if (p.hash != hash_(parent_hash, p.tokens)) fail(page_name(i) + " has a stale chained hash");
    if (find(p.hash, p.parent, p.tokens) != i) fail(page_name(i) + " is not found by its own key");
  }
  for (int i = 0; i < n_pages(); ++i)
    if (children[size_t(i)] != pages_[size_t(i)].n_children) fail(page_name(i) + " miscounts its children");
  if (free != n_free_) fail("free count " + std::to_string(n_free_) + " != " + std::to_string(free) + " free bits");
  if (registered != int(by_hash_.size())) fail("the hash index and the registered pages disagree");
  lru_.check("PageManager");
  const std::vector<int> order = lru_order();
  // Eviction order: below a cached page everything registered is cached too,
  // and less recently used, so the LRU never reaches a page before its children.
  std::vector<int> lru_position(pages_.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) lru_position[size_t(order[i])] = int(i);
  for (int i = 0; i < n_pages(); ++i) {
    const int parent = pages_[size_t(i)].parent;
    if (!pages_[size_t(i)].registered || parent == -1 || !lru_.contains(parent)) continue;
    if (!lru_.contains(i) || lru_position[size_t(i)] > lru_position[size_t(parent)])
      fail(page_name(i) + " would outlive its cached parent " + page_name(parent) + " in the LRU order");
  }
}

}  // namespace astrai
