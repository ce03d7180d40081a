// The cached pages of a page pool, least recently used first: an intrusive
// doubly linked list over page numbers, so that caching a page, reviving it
// and evicting the oldest are O(1). PageManager and WindowPageManager each
// keep one for their cached pages.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace astrai {

class PageLru {
 public:
  explicit PageLru(int n_pages) : links_(size_t(n_pages)) {}

  bool contains(int page) const { return links_[size_t(page)].listed; }
  int size() const { return size_; }
  // The least recently used page; -1 when the list is empty.
  int oldest() const { return head_; }

  // `page` (not listed) becomes the most recently used.
  void push_newest(int page) {
    Link& l = links_[size_t(page)];
    l.prev = tail_;
    l.next = -1;
    (tail_ >= 0 ? links_[size_t(tail_)].next : head_) = page;
    tail_ = page;
    l.listed = true;
    ++size_;
  }

  // Takes listed `page` off the list.
  void unlink(int page) {
    Link& l = links_[size_t(page)];
    (l.prev >= 0 ? links_[size_t(l.prev)].next : head_) = l.next;
    (l.next >= 0 ? links_[size_t(l.next)].prev : tail_) = l.prev;
    l.prev = l.next = -1;
    l.listed = false;
    --size_;
  }

  // Listed pages, least recently used first (a broken list stops after n_pages).
  std::vector<int> order() const {
    std::vector<int> pages;
    for (int p = head_; p >= 0 && pages.size() <= links_.size(); p = links_[size_t(p)].next) pages.push_back(p);
    return pages;
  }

  // Throws std::logic_error, naming `owner`, when the links, the listed flags
  // and the count disagree.
  void check(const std::string& owner) const {
    const std::vector<int> pages = order();
    int listed = 0;
    for (const Link& l : links_) listed += l.listed;
    if (int(pages.size()) != size_ || listed != size_)
      throw std::logic_error(owner + " invariant broken: the LRU list holds " + std::to_string(pages.size()) +
                             " pages, " + std::to_string(listed) + " are marked listed, the count says " +
                             std::to_string(size_));
    for (size_t i = 0; i < pages.size(); ++i)
      if (!contains(pages[i]) || links_[size_t(pages[i])].prev != (i == 0 ? -1 : pages[i - 1]))
        throw std::logic_error(owner + " invariant broken: the LRU back link of page " + std::to_string(pages[i]));
    if (tail_ != (pages.empty() ? -1 : pages.back())) throw std::logic_error(owner + " invariant broken: the LRU tail");
  }

 private:
  struct Link {
    int prev = -1;  // -1 ends the list
    int next = -1;
    bool listed = false;
  };
  std::vector<Link> links_;
  int head_ = -1;  // least recently used
  int tail_ = -1;  // most recently used
  int size_ = 0;
};

}  // namespace astrai
