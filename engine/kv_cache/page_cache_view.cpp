// PageCacheView: page-table address translation for the forward pass.
#include "engine/kv_cache/page_cache_view.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace astrai {

PageCacheView::Location PageCacheView::locate(int layer, int seq, int pos) const {
  const TaskPages& task = tasks_.at(seq);
  const int page_size = storage_.page_size();
  const int reserved = int(task.pages.size()) * page_size;
  if (layer < 0 || layer >= storage_.n_layers() || pos < 0 || pos >= reserved)
    throw std::out_of_range("PageCache: layer " + std::to_string(layer) + ", position " + std::to_string(pos) +
                            " of task " + std::to_string(seq) + " is outside its " + std::to_string(reserved) +
                            " reserved positions");
  return {task.pages[size_t(pos / page_size)], pos % page_size};
}

void PageCacheView::write(int layer, int seq, int pos, const float* key, const float* value) {
  const Location at = locate(layer, seq, pos);
  if (pool_.is_registered(at.page))
    throw std::logic_error("PageCache: position " + std::to_string(pos) + " of task " + std::to_string(seq) +
                           " lies in shared prefix page " + std::to_string(at.page) +
                           ", which is never written again (the forward pass must start at the prefix hit)");
  std::copy(key, key + storage_.kv_dim(), storage_.key_row(layer, at.page, at.offset));
  std::copy(value, value + storage_.kv_dim(), storage_.value_row(layer, at.page, at.offset));
}

const float* PageCacheView::key(int layer, int seq, int pos) const {
  const Location at = locate(layer, seq, pos);
  return storage_.key_row(layer, at.page, at.offset);
}

const float* PageCacheView::value(int layer, int seq, int pos) const {
  const Location at = locate(layer, seq, pos);
  return storage_.value_row(layer, at.page, at.offset);
}

}  // namespace astrai
