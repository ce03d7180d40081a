// ContiguousCache bookkeeping: one slot per task, the lowest free slot first,
// no room as an answer without side effects, misuse as exceptions.
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "engine/kv_cache/contiguous_cache.h"

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_contiguous_cache {

astrai::ModelConfig small_config() {
  astrai::ModelConfig c{.dim = 8, .hidden_dim = 8, .n_layers = 2, .n_heads = 2, .n_kv_heads = 1, .vocab_size = 16,
                        .max_seq_len = 12};
  return c;
}


TEST_CASE("ContiguousCache gives each task a slot until none is free", "[kv_cache][contiguous]") {
  astrai::ContiguousCache cache(small_config(), 2);
  const std::vector<int> prompt{1, 2, 3};
  CHECK(cache.capacity_tokens() == 24);
  CHECK(cache.admit(7, prompt) == 0);  // never a prefix hit
  CHECK(cache.admit(3, prompt) == 0);
  CHECK(cache.slot_of(7) == 0);
  CHECK(cache.slot_of(3) == 1);
  CHECK_FALSE(cache.admit(9, prompt).has_value());
  CHECK_FALSE(cache.has_task(9));
  CHECK(cache.stats().blocks_free == 0);
  CHECK(cache.reserve(7, 12));
  cache.commit(7, std::vector<int>(12, 1));
  cache.release(7);
  CHECK(cache.admit(9, prompt) == 0);
  CHECK(cache.slot_of(9) == 0);
  cache.release(9);
  cache.release(3);
  CHECK(cache.all_free());
  CHECK(cache.free_tokens() == 24);
}

TEST_CASE("Misuse of ContiguousCache throws naming the problem", "[kv_cache][contiguous]") {
  astrai::ContiguousCache cache(small_config(), 1);
  CHECK_THROWS_AS(cache.admit(1, std::vector<int>{}), std::invalid_argument);
  CHECK_THROWS_AS(cache.admit(1, std::vector<int>(13, 1)), std::invalid_argument);
  REQUIRE(cache.admit(1, std::vector<int>{1}) == 0);
  CHECK_THROWS_AS(cache.admit(1, std::vector<int>{1}), std::invalid_argument);
  CHECK_THROWS_AS(cache.reserve(1, 13), std::invalid_argument);
  CHECK_THROWS_WITH(cache.reserve(2, 1), Catch::Contains("task 2"));
  CHECK_THROWS_AS(cache.commit(2, std::vector<int>{1}), std::invalid_argument);
  const std::vector<float> row(4, 0.0f);
  CHECK_THROWS_AS(cache.view().write(0, 1, 12, row.data(), row.data()), std::out_of_range);
  CHECK_THROWS_AS(cache.view().write(2, 1, 0, row.data(), row.data()), std::out_of_range);
  CHECK_THROWS_AS(cache.view().key(0, 5, 0), std::invalid_argument);
  CHECK_THROWS_AS(astrai::ContiguousCache(small_config(), 0), std::invalid_argument);
}

}  // namespace test_contiguous_cache
