// What rank 0 tells the other tensor-parallel ranks (cuda/tensor_parallel/
// rank_messages.h), host code only: every message survives its encoding
// (a step's plan field for field, for plans plan_batch made from random
// batches, padded or not), a frame of one kind is refused as another and a
// corrupt frame is an error, and check_rank_plan accepts every plan
// plan_batch makes while refusing any index pushed out of its range.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "cuda/batch_plan.h"
#include "cuda/device_page_cache.h"
#include "cuda/tensor_parallel/rank_messages.h"
#include "reference/synthetic_model.h"

using namespace astrai;
using namespace astrai::cuda;

namespace {

bool same_plan(const BatchPlan& a, const BatchPlan& b) {
  return a.rows == b.rows && a.n_seqs == b.n_seqs && a.pages_per_seq == b.pages_per_seq &&
         a.partial_rows == b.partial_rows && a.tokens == b.tokens && a.row_pos == b.row_pos &&
         a.row_seq == b.row_seq && a.row_slot == b.row_slot && a.page_tables == b.page_tables &&
         a.decode_rows == b.decode_rows && a.tile_first == b.tile_first && a.tile_count == b.tile_count &&
         a.tile_rows == b.tile_rows && a.wanted_rows == b.wanted_rows && a.row_partial == b.row_partial &&
         a.chunk_tiles == b.chunk_tiles;
}

struct Drawn {
  BatchPlan plan;
  int n_pages, page_size;
};

// A plan of a random batch: sequences of random lengths, some rows decode.
Drawn random_plan(const ModelConfig& config) {
  const int page_size = *rc::gen::element(4, 16);
  const int n_pages = 4 * config.max_seq_len / page_size + 8;
  PageManager pages(config.max_seq_len, n_pages, page_size);
  std::vector<BatchToken> batch;
  const int n_seqs = *rc::gen::inRange(1, 5);
  for (int s = 0; s < n_seqs; ++s) {
    const int len = *rc::gen::inRange(1, config.max_seq_len);
    const int fresh = *rc::gen::element(1, std::min(len, 24));
    RC_ASSERT(pages.admit(s, std::vector<int>(size_t(len), 1)).has_value());
    for (int pos = len - fresh; pos < len; ++pos)
      batch.push_back({*rc::gen::inRange(0, config.vocab_size), s, pos, pos == len - 1 || *rc::gen::arbitrary<bool>()});
  }
  BatchPlan plan = plan_batch(batch, pages, config, 16, *rc::gen::element(16, 64));
  if (plan.decode_only() && *rc::gen::arbitrary<bool>()) {
    const int rows = graph_batch_rows(plan.rows);
    plan = pad_decode_plan(plan, rows, graph_batch_rows(int(plan.wanted_rows.size())), n_pages * page_size,
                           DevicePageCache::kPaddingSlots);
  }
  return {plan, n_pages, page_size};
}

}  // namespace

TEST_CASE("rank messages survive their encoding", "[cuda][tensor_parallel]") {
  const tp::Hello h = tp::decode_hello(tp::encode(tp::Hello{3, 4, 4711, "node-7", "dim=64 ..."}));
  CHECK((h.rank == 3 && h.world == 4 && h.pid == 4711 && h.host == "node-7" && h.model == "dim=64 ..."));
  std::string id(128, '\0');
  for (size_t i = 0; i < id.size(); ++i) id[i] = char(i * 37);  // binary, NUL bytes included
  const tp::Setup s = tp::decode_setup(tp::encode(tp::Setup{id, 1, false, true, true}));
  CHECK((s.nccl_id == id && s.dtype == 1 && !s.cuda_graphs && s.batch_invariant && s.poison_scratch));
  const tp::Ready r = tp::decode_ready(tp::encode(tp::Ready{uint64_t(17) << 33, 5}));
  CHECK((r.weights_bytes == uint64_t(17) << 33 && r.free_bytes == 5));
  CHECK(tp::decode_failed(tp::encode(tp::Failed{"out of memory"})).message == "out of memory");
  const tp::CreateCache c = tp::decode_create_cache(tp::encode(tp::CreateCache{2, 100, 16}));
  CHECK((c.id == 2 && c.n_pages == 100 && c.page_size == 16));
  CHECK(tp::decode_drop_cache(tp::encode(tp::DropCache{9})).id == 9);
  CHECK(tp::kind_of(tp::encode(tp::Shutdown{})) == tp::Kind::Shutdown);
  rc::prop("a step's plan, field for field", [] {
    ModelConfig config = preset_config("tiny");
    config.max_seq_len = 96;
    const Drawn d = random_plan(config);
    const std::vector<int> copies = *rc::gen::container<std::vector<int>>(2 * *rc::gen::inRange(0, 4),
                                                                           rc::gen::inRange(0, d.n_pages));
    const tp::Step back = tp::decode_step(tp::encode(tp::Step{5, true, copies, d.plan}));
    RC_ASSERT(back.cache == 5);
    RC_ASSERT(back.padded);
    RC_ASSERT(back.copies == copies);
    RC_ASSERT(same_plan(back.plan, d.plan));
  });
}

TEST_CASE("a frame of another kind, or not a message, is refused", "[cuda][tensor_parallel]") {
  CHECK_THROWS_WITH(tp::decode_step(tp::encode(tp::Ready{})), Catch::Contains("a Ready message where Step was expected"));
  CHECK_THROWS_WITH(tp::kind_of("not msgpack at all"), Catch::Contains("not a tensor-parallel message"));
  CHECK_THROWS(tp::decode_hello(""));
  // A container header that claims more elements than the frame has bytes
  // (msgpack's array32 of 2^32 - 1, a map32, a str32) is refused before
  // anything is allocated for it: seed 6751775978817248800 of the property
  // below flipped a byte of a Step to 0xdd, and msgpack's unpacker reserved
  // 96 GiB (std::bad_alloc here; on CI's machine, ten minutes of paging).
  for (const char* body : {"\xdd\xff\xff\xff\xff", "\xdf\xff\xff\xff\xff", "\xdb\xff\xff\xff\xff"}) {
    const std::string frame = std::string("\x92\x07") + body;  // [Step, body]
    CHECK_THROWS_WITH(tp::decode_step(frame), Catch::Contains("undecodable"));
    CHECK_THROWS_WITH(tp::kind_of(std::string("\x92") + body + "\x07"), Catch::Contains("not a tensor-parallel message"));
  }
  rc::prop("every truncation and byte flip of a step is refused or decodes (never crashes)", [] {
    ModelConfig config = preset_config("tiny");
    config.max_seq_len = 64;
    const Drawn d = random_plan(config);
    std::string frame = tp::encode(tp::Step{1, false, {}, d.plan});
    if (*rc::gen::arbitrary<bool>()) {
      frame.resize(*rc::gen::inRange<size_t>(0, frame.size()));
    } else {
      const size_t at = *rc::gen::inRange<size_t>(0, frame.size());
      frame[at] = char(*rc::gen::inRange(0, 256));
    }
    try {
      const tp::Step s = tp::decode_step(frame);
      try {
        tp::check_rank_plan(s.plan, d.n_pages, d.page_size, DevicePageCache::kPaddingSlots, config.vocab_size);
      } catch (const std::runtime_error&) {
      }
    } catch (const std::runtime_error&) {
    }
  });
}

TEST_CASE("a rank runs every plan plan_batch makes and no plan with an index out of range", "[cuda][tensor_parallel]") {
  rc::prop("plans of random batches pass; one index pushed past its end fails", [] {
    ModelConfig config = preset_config("tiny");
    config.max_seq_len = 96;
    Drawn d = random_plan(config);
    const auto check = [&](const BatchPlan& p) {
      tp::check_rank_plan(p, d.n_pages, d.page_size, DevicePageCache::kPaddingSlots, config.vocab_size);
    };
    check(d.plan);
    BatchPlan bad = d.plan;
    std::vector<std::pair<std::vector<int>*, int>> lists = {
        {&bad.tokens, config.vocab_size}, {&bad.row_seq, bad.n_seqs}, {&bad.page_tables, d.n_pages},
        {&bad.row_slot, d.n_pages * d.page_size + DevicePageCache::kPaddingSlots}, {&bad.wanted_rows, bad.rows}};
    const auto [list, end] = lists[*rc::gen::inRange<size_t>(0, lists.size())];
    if (list->empty()) RC_DISCARD("an empty list");
    (*list)[*rc::gen::inRange<size_t>(0, list->size())] = end + *rc::gen::inRange(0, 3);
    RC_ASSERT_THROWS_AS(check(bad), std::runtime_error);
    BatchPlan short_rows = d.plan;
    short_rows.row_pos.pop_back();
    RC_ASSERT_THROWS_AS(check(short_rows), std::runtime_error);
  });
}
