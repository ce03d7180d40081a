// PagedKVCache: one life cycle over the full layers' PageManager and the
// sliding layers' WindowPageManager. PageCache: host storage of the pages
// and the view's address translation.
#include "engine/kv_cache/page_cache.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace astrai {

namespace {

const ModelConfig& validated(const ModelConfig& config) {
  config.validate();
  return config;
}

}  // namespace

// ---- PagedKVCache ----

PagedKVCache::PagedKVCache(int max_seq_len, int n_pages, int page_size, PrefixHash hash,
                           std::optional<SlidingPool> sliding)
    : pages_(max_seq_len, n_pages, page_size, std::move(hash)) {
  if (!sliding) return;
  sliding_ = std::make_unique<WindowPageManager>(max_seq_len, sliding->n_pages, page_size, sliding->window,
                                                 sliding->align);
  // A sliding page is found through the full page of the same prefix: when
  // that one's registration goes, so does the tie.
  pages_.on_unregister([pool = sliding_.get()](int page) { pool->forget(page); });
}

std::optional<int> PagedKVCache::admit(int task_id, std::span<const int> prompt) {
  if (!sliding_) return pages_.admit(task_id, prompt);
  if (pages_.has_task(task_id))
    throw std::invalid_argument("PageCache: task " + std::to_string(task_id) + " is already admitted");
  // The longest full-layer hit whose window the sliding pool still holds.
  const std::vector<int> full_hit = pages_.prefix_hit(prompt);
  size_t h = full_hit.size();
  std::optional<std::vector<int>> sliding_hit = sliding_->hit_pages(std::span(full_hit).first(h));
  while (!sliding_hit) sliding_hit = sliding_->hit_pages(std::span(full_hit).first(--h));  // h = 0 always fits
  const int hit_tokens = int(h) * page_size();
  if (pages_.pages_short_for(prompt, int(h)) > 0 || sliding_->short_by(int(prompt.size()), hit_tokens, *sliding_hit) > 0)
    return std::nullopt;
  // The full admission shares full_hit[0, h) before it allocates, so its
  // evictions never untie the sliding hit pages (tagged with those).
  const std::optional<int> hit = pages_.admit(task_id, prompt, int(h));
  if (hit != hit_tokens) throw std::logic_error("PagedKVCache: the full layers' hit changed during admission");
  sliding_->admit(task_id, int(prompt.size()), hit_tokens, *sliding_hit);
  return hit;
}

bool PagedKVCache::reserve(int task_id, int n_tokens) {
  // Both pools or neither: ask the sliding pool first, which changes nothing
  // when it answers no; then the full pool, whose no is also side-effect
  // free, and only after it the sliding pool grows.
  if (sliding_ && !sliding_->can_reserve(task_id, n_tokens)) return false;
  std::vector<PageManager::PageCopy> copies;
  if (!pages_.reserve(task_id, n_tokens, &copies)) return false;
  for (const auto& c : copies) copy_page(PagePool::Full, c.from, c.to);
  if (!sliding_) return true;
  copies.clear();
  if (!sliding_->reserve(task_id, n_tokens, &copies))
    throw std::logic_error("PagedKVCache: the sliding pool refused a reservation it had room for");
  for (const auto& c : copies) copy_page(PagePool::Sliding, c.from, c.to);
  return true;
}

void PagedKVCache::commit(int task_id, std::span<const int> tokens) {
  pages_.commit(task_id, tokens);
  if (sliding_)
    sliding_->commit(task_id, int(tokens.size()), pages_.page_table(task_id), pages_.registered_pages(task_id));
}

bool PagedKVCache::fork(int parent_id, int child_id, int n_tokens) {
  // Misuse is PageManager::fork's to report; a fork from before the
  // parent's window is a no.
  if (sliding_ && pages_.has_task(parent_id) && !pages_.has_task(child_id) && n_tokens >= 1 &&
      n_tokens <= pages_.cached_tokens(parent_id) && !sliding_->can_fork(parent_id, n_tokens))
    return false;
  pages_.fork(parent_id, child_id, n_tokens);
  if (sliding_) sliding_->fork(parent_id, child_id, n_tokens);
  return true;
}

void PagedKVCache::release(int task_id) {
  pages_.release(task_id);
  if (sliding_) sliding_->release(task_id);
}

KVCacheStats PagedKVCache::stats() const {
  KVCacheStats s = pages_.stats();
  if (sliding_) {
    const KVCacheStats w = sliding_->stats();
    s.sliding_blocks_total = w.blocks_total;
    s.sliding_blocks_held = w.blocks_held;
    s.sliding_blocks_cached = w.blocks_cached;
    s.sliding_blocks_free = w.blocks_free;
  }
  return s;
}

bool PagedKVCache::reset_prefix_cache() {
  if (!pages_.reset_prefix_cache()) return false;
  if (sliding_) sliding_->reset();
  return true;
}

void PagedKVCache::assign_layers(const ModelConfig& config) {
  int n_full = 0, n_sliding = 0;
  layer_pool_.clear();
  layer_index_.clear();
  for (int layer = 0; layer < config.n_layers; ++layer) {
    const bool own_pool = sliding_ && config.sliding(layer);
    layer_pool_.push_back(own_pool ? PagePool::Sliding : PagePool::Full);
    layer_index_.push_back(own_pool ? n_sliding++ : n_full++);
  }
}

void PagedKVCache::check_invariants() const {
  pages_.check_invariants();
  if (!sliding_) return;
  sliding_->check_invariants();
  // Every tag names a registered full page (forget() unties the evicted ones).
  for (int p = 0; p < sliding_->n_pages(); ++p)
    if (sliding_->tag(p) >= 0 && !pages_.is_registered(sliding_->tag(p)))
      throw std::logic_error("PagedKVCache invariant broken: sliding page " + std::to_string(p) +
                             " is tied to unregistered full page " + std::to_string(sliding_->tag(p)));
}

std::optional<SlidingPool> sliding_pool_for(const ModelConfig& config, int n_pages, int align) {
  if (config.sliding_window <= 0 || config.sliding_window >= config.max_seq_len) return std::nullopt;
  return SlidingPool{n_pages, config.sliding_window, align};
}

int sliding_pages_for(const ModelConfig& config, int full_pages, int page_size, int running_tasks, int align) {
  const auto pool = sliding_pool_for(config, 1, align);
  if (!pool) return 0;
  const int pages_per_context = (config.max_seq_len + page_size - 1) / page_size;
  const long wanted = long(pages_per_context) + long(std::max(running_tasks - 1, 0)) *
                                                    long(WindowPageManager::window_pages(pool->window, page_size, pool->align));
  return int(std::min(long(full_pages), wanted));
}

// ---- PageCache ----

PageCache::PageCache(const ModelConfig& config, int n_pages, int page_size, PrefixHash hash, int sliding_pages)
    : PagedKVCache(validated(config).max_seq_len, n_pages, page_size, std::move(hash),
                   sliding_pages > 0 ? sliding_pool_for(config, sliding_pages) : std::nullopt),
      kv_dim_(config.kv_dim()),
      view_(*this) {
  assign_layers(config);
  auto shape = [&](int layers, int pages) {
    return std::array<size_t, 5>{size_t(layers), size_t(pages), size_t(page_size), size_t(config.n_kv_heads),
                                 size_t(config.head_dim())};
  };
  full_.keys = xt::xtensor<float, 5>(shape(pool_layers(PagePool::Full), n_pages));
  full_.values = xt::xtensor<float, 5>(full_.keys.shape());
  sliding_rows_.keys =
      xt::xtensor<float, 5>(shape(pool_layers(PagePool::Sliding), sliding_ ? sliding_->n_pages() : 0));
  sliding_rows_.values = xt::xtensor<float, 5>(sliding_rows_.keys.shape());
}

void PageCache::copy_page(PagePool pool, int from, int to) {
  Rows& r = rows(pool);
  const size_t page_floats = size_t(page_size()) * size_t(kv_dim_);
  const size_t layer_floats = r.keys.shape(1) * page_floats;
  for (size_t layer = 0; layer < r.keys.shape(0); ++layer) {
    for (xt::xtensor<float, 5>* t : {&r.keys, &r.values}) {
      const float* src = t->data() + layer * layer_floats + size_t(from) * page_floats;
      std::copy(src, src + page_floats, t->data() + layer * layer_floats + size_t(to) * page_floats);
    }
  }
}

PageCacheView::Row PageCacheView::row(int layer, int seq, int pos, bool for_write) const {
  if (layer < 0 || layer >= cache_.n_layers())
    throw std::out_of_range("PageCache: layer " + std::to_string(layer) + " is outside [0, " +
                            std::to_string(cache_.n_layers()) + ")");
  const PagePool pool = cache_.layer_pool(layer);
  const PageManager::RowAddress at = pool == PagePool::Full ? cache_.pages().locate(seq, pos, for_write)
                                                            : cache_.sliding_pages()->locate(seq, pos, for_write);
  PageCache::Rows& rows = cache_.rows(pool);
  const size_t offset = ((size_t(cache_.layer_index(layer)) * rows.keys.shape(1) + size_t(at.page)) *
                             size_t(cache_.page_size()) +
                         size_t(at.offset)) *
                        size_t(cache_.kv_dim());
  return {rows.keys.data() + offset, rows.values.data() + offset};
}

void PageCacheView::write(int layer, int seq, int pos, const float* key, const float* value) {
  const Row r = row(layer, seq, pos, true);
  std::copy(key, key + cache_.kv_dim(), r.key);
  std::copy(value, value + cache_.kv_dim(), r.value);
}

const float* PageCacheView::key(int layer, int seq, int pos) const { return row(layer, seq, pos, false).key; }

const float* PageCacheView::value(int layer, int seq, int pos) const { return row(layer, seq, pos, false).value; }

}  // namespace astrai
