// The emulated device's warp collectives, atomics and cp.async
// (-Dcuda=emulated only), against CUDA's documented semantics written out
// here independently of block_runner.cpp:
//  - __shfl_up_sync(m, v, d, w): lane reads lane - d, or keeps v when that
//    falls below its group of w lanes; __shfl_down_sync reads lane + d, or
//    keeps v past the end of its group; __shfl_xor_sync reads lane ^ d, or
//    keeps v past the end of its group (an earlier group is readable);
//    __shfl_sync(m, v, s, w) reads lane s mod w of its group.
//  - a collective's mask must name every live lane of the warp (a fault
//    otherwise, as for __shfl_down_sync).
// Values are small integers, so float sums are exact and compared with ==.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda/emulation/emulated_device.h"
#include "cuda/kernels/async_copy.cuh"
#include "cuda/kernels/launch.cuh"

using namespace astrai;
using Catch::Matchers::Contains;

namespace {

enum class Shuffle { Up, Down, Xor, Index };

// The expected source lane, from the CUDA programming guide's wording.
int documented_source(Shuffle op, int lane, int operand, int width) {
  const int group_first = (lane / width) * width, group_last = group_first + width - 1;
  switch (op) {
    case Shuffle::Up: return lane - operand < group_first ? lane : lane - operand;
    case Shuffle::Down: return lane + operand > group_last ? lane : lane + operand;
    case Shuffle::Xor: return (lane ^ operand) > group_last ? lane : (lane ^ operand);
    case Shuffle::Index: return group_first + operand % width;
  }
  return -1;
}

template <typename T>
void shuffle_kernel(const T* in, T* out, Shuffle op, unsigned mask, int operand, int width) {
  const T v = in[threadIdx.x];
  T r{};
  switch (op) {
    case Shuffle::Up: r = __shfl_up_sync(mask, v, unsigned(operand), width); break;
    case Shuffle::Down: r = __shfl_down_sync(mask, v, unsigned(operand), width); break;
    case Shuffle::Xor: r = __shfl_xor_sync(mask, v, operand, width); break;
    case Shuffle::Index: r = __shfl_sync(mask, v, operand, width); break;
  }
  out[threadIdx.x] = r;
}

template <typename T>
void run_block(const char* name, unsigned threads, size_t smem, T body) {
  emu::run_kernel(emu::KernelLaunch{name, nullptr, dim3(1), dim3(threads), smem, body});
}

template <typename T>
void check_every_shuffle(T first_value) {
  const int threads = 64;
  std::vector<T> in(threads), out(threads);
  for (int i = 0; i < threads; ++i) in[size_t(i)] = T(first_value + T(3 * i));  // distinct per lane and warp
  for (Shuffle op : {Shuffle::Up, Shuffle::Down, Shuffle::Xor, Shuffle::Index})
    for (int width : {1, 2, 4, 8, 16, 32})
      for (int operand = 0; operand < 40; ++operand) {
        run_block("shuffle", threads, 0,
                  [&] { shuffle_kernel<T>(in.data(), out.data(), op, 0xffffffffu, operand, width); });
        for (int t = 0; t < threads; ++t) {
          const int lane = t % 32, warp = t / 32;
          INFO("op " << int(op) << " width " << width << " operand " << operand << " thread " << t);
          REQUIRE(out[size_t(t)] == in[size_t(warp * 32 + documented_source(op, lane, operand, width))]);
        }
      }
}

void butterfly_sum(const float* in, float* out) {
  float v = in[threadIdx.x];
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  out[threadIdx.x] = v;
}

void scan_up(const int* in, int* out) {
  int v = in[threadIdx.x];
  const int lane = int(threadIdx.x % 32);
  for (int d = 1; d < 32; d *= 2) {
    const int from = __shfl_up_sync(0xffffffffu, v, unsigned(d));
    if (lane >= d) v += from;
  }
  out[threadIdx.x] = v;
}

void votes(const int* in, unsigned* ballot, int* any, int* all) {
  const int p = in[threadIdx.x];
  ballot[threadIdx.x] = __ballot_sync(0xffffffffu, p);
  any[threadIdx.x] = __any_sync(0xffffffffu, p);
  all[threadIdx.x] = __all_sync(0xffffffffu, p);
}

void narrow_mask(int* out, int which) {
  const int v = int(threadIdx.x);
  switch (which) {
    case 0: out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, v, 1); break;
    case 1: out[threadIdx.x] = __shfl_sync(0xfffffffeu, v, 0); break;
    case 2: out[threadIdx.x] = __shfl_up_sync(0x7fffffffu, v, 1u); break;
    case 3: __syncwarp(0x0000ffffu); break;
    case 4: out[threadIdx.x] = int(__ballot_sync(0xffff0000u, v)); break;
  }
}

// Half a warp at __syncwarp, the other half at __syncthreads: no thread can go on.
void diverged_syncwarp(int* out) {
  if (threadIdx.x < 16) __syncwarp();
  else __syncthreads();
  out[threadIdx.x] = 1;
}

}  // namespace

TEST_CASE("emulated warp shuffles: every op, width and lane offset as CUDA documents them", "[cuda][emulation]") {
  check_every_shuffle<float>(0.5f);
  check_every_shuffle<int>(-70);
  check_every_shuffle<unsigned>(4000000000u);
}

TEST_CASE("emulated warp shuffles: a butterfly sum and an up-scan", "[cuda][emulation]") {
  std::vector<float> in(64), out(64);
  for (int i = 0; i < 64; ++i) in[size_t(i)] = float(i);
  run_block("butterfly_sum", 64, 0, [&] { butterfly_sum(in.data(), out.data()); });
  for (int t = 0; t < 64; ++t) CHECK(out[size_t(t)] == float(t < 32 ? 31 * 32 / 2 : (32 + 63) * 32 / 2));
  std::vector<int> ones(64, 1), prefix(64);
  run_block("scan_up", 64, 0, [&] { scan_up(ones.data(), prefix.data()); });
  for (int t = 0; t < 64; ++t) CHECK(prefix[size_t(t)] == t % 32 + 1);  // inclusive scan of ones
}

TEST_CASE("emulated warp votes: __ballot_sync, __any_sync, __all_sync", "[cuda][emulation]") {
  // Warp 0: lanes 3 and 17 true; warp 1: every lane true; blockDim 40 leaves
  // warp 1 with 8 live lanes, and its mask covers them.
  const int threads = 40;
  std::vector<int> p(threads, 0), any(threads), all(threads);
  std::vector<unsigned> ballot(threads);
  p[3] = 1;
  p[17] = 5;
  for (int t = 32; t < threads; ++t) p[size_t(t)] = 1;
  run_block("votes", threads, 0, [&] { votes(p.data(), ballot.data(), any.data(), all.data()); });
  for (int t = 0; t < 32; ++t) {
    CHECK(ballot[size_t(t)] == ((1u << 3) | (1u << 17)));
    CHECK(any[size_t(t)] == 1);
    CHECK(all[size_t(t)] == 0);
  }
  for (int t = 32; t < threads; ++t) {
    CHECK(ballot[size_t(t)] == 0xffu);
    CHECK(any[size_t(t)] == 1);
    CHECK(all[size_t(t)] == 1);
  }
}

TEST_CASE("emulated warp collectives: a mask that leaves out a live lane is a fault", "[cuda][emulation]") {
  std::vector<int> out(32);
  for (int which = 0; which < 5; ++which) {
    INFO("collective " << which);
    CHECK_THROWS_WITH(run_block("narrow_mask", 32, 0, [&] { narrow_mask(out.data(), which); }),
                      Contains("live lanes 0xffffffff"));
  }
  // A partial warp's mask only has to name its live lanes.
  std::vector<int> few(8);
  run_block("narrow_mask", 8, 0, [&] { narrow_mask(few.data(), 3); });
  CHECK_THROWS_WITH(run_block("diverged_syncwarp", 32, 0, [&] { diverged_syncwarp(out.data()); }),
                    Contains("no thread can go on"));
}

namespace {

void atomics_kernel(int* i_sum, unsigned* u_sum, float* f_sum, int* i_max, int* i_min, unsigned* u_max,
                    int* cas_counter, int* exch) {
  const int t = int(blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(i_sum, t - 100);
  atomicAdd(u_sum, 2u);
  atomicAdd(f_sum, float(t));
  atomicMax(i_max, (t * 37) % 101 - 50);
  atomicMin(i_min, (t * 37) % 101 - 50);
  atomicMax(u_max, unsigned(t) * 3u);
  // An increment through compare-and-swap, the loop every CAS user writes.
  int seen = *cas_counter, expected;
  do {
    expected = seen;
    seen = atomicCAS(cas_counter, expected, expected + 1);
  } while (seen != expected);
  atomicExch(exch, t);
}

}  // namespace

TEST_CASE("emulated atomics: sums, extremes, compare-and-swap and exchange over four blocks", "[cuda][emulation]") {
  const int blocks = 4, threads = 64, n = blocks * threads;
  int i_sum = 0, i_max = -1000, i_min = 1000, cas = 0, exch = -1;
  unsigned u_sum = 0, u_max = 0;
  float f_sum = 0.0f;
  emu::run_kernel(emu::KernelLaunch{"atomics", nullptr, dim3(blocks), dim3(threads), 0, [&] {
                                      atomics_kernel(&i_sum, &u_sum, &f_sum, &i_max, &i_min, &u_max, &cas, &exch);
                                    }});
  CHECK(i_sum == n * (n - 1) / 2 - 100 * n);
  CHECK(u_sum == 2u * unsigned(n));
  CHECK(f_sum == float(n * (n - 1) / 2));  // every partial sum an integer below 2^24: exact in any order
  CHECK(i_max == 50);                      // (t * 37) % 101 takes every value 0..100 over 101 consecutive t
  CHECK(i_min == -50);
  CHECK(u_max == unsigned(n - 1) * 3u);
  CHECK(cas == n);
  CHECK(exch >= 0);
  CHECK(exch < n);
  // Each atomic returns the old value.
  int x = 5;
  CHECK(emu::atomic_exch(&x, 9) == 5);
  CHECK(emu::atomic_cas(&x, 8, 1) == 9);
  CHECK(x == 9);
  CHECK(emu::atomic_cas(&x, 9, 1) == 9);
  CHECK(x == 1);
  CHECK(emu::atomic_add(&x, 2) == 1);
}

namespace {

// 16 threads copy 64 floats (16 bytes each) into dynamic shared memory in two
// groups: floats [0, 32) first, [32, 64) second. Each thread records what its
// own destinations hold before any wait, after wait<1> (the first group done)
// and after wait<0>; then, after a barrier, a float another thread copied.
void async_copy_kernel(const float* global, float* before, float* after_first, float* after_all, float* other,
                       bool wait) {
  ASTRAI_DYNAMIC_SHARED(float, tile);
  const int t = int(threadIdx.x);  // 16 threads
  const int a = 4 * (t / 2) + 32 * (t % 2);  // thread t: floats [a, a + 4), in group t % 2
  if (t % 2 == 0) {
    cp_async_16(&tile[a], &global[a]);
    cp_async_commit();
    cp_async_commit();  // an empty group: the thread's second group
  } else {
    cp_async_commit();  // an empty first group
    cp_async_16(&tile[a], &global[a]);
    cp_async_commit();
  }
  before[t] = tile[a];
  if (wait) cp_async_wait<1>();
  after_first[t] = tile[a];
  if (wait) cp_async_wait<0>();
  after_all[t] = tile[a];
  __syncthreads();
  other[t] = tile[(a + 36) % 64];
}

}  // namespace

TEST_CASE("emulated cp.async: a copy lands only when a wait covers its group", "[cuda][emulation]") {
  std::vector<float> global(64), before(16), after_first(16), after_all(16), other(16);
  for (int i = 0; i < 64; ++i) global[size_t(i)] = float(i + 1);
  const auto run = [&](bool wait) {
    run_block("async_copy", 16, 64 * sizeof(float), [&] {
      async_copy_kernel(global.data(), before.data(), after_first.data(), after_all.data(), other.data(), wait);
    });
  };
  run(true);
  for (int t = 0; t < 16; ++t) {
    INFO("thread " << t);
    const int a = 4 * (t / 2) + 32 * (t % 2);
    CHECK(std::isnan(before[size_t(t)]));  // dynamic shared memory starts as NaN
    if (t % 2 == 0) CHECK(after_first[size_t(t)] == float(a + 1));  // its copy was in group 0
    else CHECK(std::isnan(after_first[size_t(t)]));                 // its copy is in group 1, still pending
    CHECK(after_all[size_t(t)] == float(a + 1));
    CHECK(other[size_t(t)] == float((a + 36) % 64 + 1));
  }
  // Without the waits nothing lands: the reads after the barrier see NaN.
  run(false);
  for (int t = 0; t < 16; ++t) CHECK(std::isnan(other[size_t(t)]));
}

namespace {

void record_block_order(std::vector<int>* order) {
  if (threadIdx.x == 0) order->push_back(int(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)));
}

}  // namespace

TEST_CASE("emulated blocks run in index order, or in a reproducible shuffled order with a seed",
          "[cuda][emulation]") {
  const auto order_with = [](uint64_t seed) {
    emu::set_thread_order_seed(seed);
    std::vector<int> order;
    emu::run_kernel(emu::KernelLaunch{"record_block_order", nullptr, dim3(4, 3, 2), dim3(2), 0,
                                      [&] { record_block_order(&order); }});
    emu::set_thread_order_seed(0);
    return order;
  };
  std::vector<int> identity(24);
  for (int i = 0; i < 24; ++i) identity[size_t(i)] = i;
  CHECK(order_with(0) == identity);
  const auto shuffled = order_with(20261130);
  CHECK(shuffled != identity);  // a fixed seed's permutation; the identity would have odds 1/24!
  CHECK(std::is_permutation(shuffled.begin(), shuffled.end(), identity.begin()));
  CHECK(order_with(20261130) == shuffled);
  CHECK(order_with(7) != shuffled);
}
