// The performance model's rules (cuda/perf_model/), no device needed: worked
// examples from the CUDA guides, and properties against a brute-force
// statement of the same rule (byte sets and per-bank word sets built one
// byte at a time, written independently of the sorting code under test).
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <map>
#include <random>
#include <set>
#include <vector>

#include "cuda/perf_model/access_collector.h"
#include "cuda/perf_model/kernel_resources.h"
#include "cuda/perf_model/occupancy.h"
#include "cuda/perf_model/roofline.h"
#include "cuda/perf_model/warp_access.h"

using namespace astrai::cuda::perf;

namespace {

std::vector<LaneAccess> strided(int lanes, std::uintptr_t base, std::uint32_t bytes, std::uintptr_t stride) {
  std::vector<LaneAccess> out;
  for (int l = 0; l < lanes; ++l) out.push_back({l, base + std::uintptr_t(l) * stride, bytes});
  return out;
}

}  // namespace

TEST_CASE("global sectors: the guide's coalescing examples", "[perf_model]") {
  // 32 lanes x 4 consecutive aligned bytes: 128 bytes in 4 sectors.
  GlobalCost c = global_cost(strided(32, 4096, 4, 4));
  CHECK(c.requested_bytes == 128);
  CHECK(c.sectors == 4);
  CHECK(c.efficiency() == 1.0);
  // Misaligned by 4 bytes: one more sector.
  CHECK(global_cost(strided(32, 4100, 4, 4)).sectors == 5);
  // A stride of two words: 8 sectors for 128 bytes.
  c = global_cost(strided(32, 0, 4, 8));
  CHECK(c.sectors == 8);
  CHECK(c.efficiency() == 0.5);
  // 16-byte vector loads: 512 bytes in 16 sectors.
  c = global_cost(strided(32, 0, 16, 16));
  CHECK(c.sectors == 16);
  CHECK(c.efficiency() == 1.0);
  // Every lane reads the same float: 4 bytes asked for, one sector.
  c = global_cost(strided(32, 64, 4, 0));
  CHECK(c.requested_bytes == 4);
  CHECK(c.sectors == 1);
  CHECK(c.efficiency() == 4.0 / 32.0);
  // A scalar bf16 load per lane, one row of a 4096-wide matrix per lane (the
  // layout the issue calls out): 32 sectors for 64 bytes.
  CHECK(global_cost(strided(32, 0, 2, 8192)).sectors == 32);
}

TEST_CASE("shared wavefronts: bank conflicts as the guide counts them", "[perf_model]") {
  CHECK(shared_cost(strided(32, 0, 4, 4)).wavefronts == 1);     // consecutive words
  CHECK(shared_cost(strided(32, 0, 4, 8)).wavefronts == 2);     // stride 2: two-way conflict
  CHECK(shared_cost(strided(32, 0, 4, 128)).wavefronts == 32);  // one column of a 32-wide float tile
  CHECK(shared_cost(strided(32, 0, 4, 132)).wavefronts == 1);   // the same column, rows padded by one float
  CHECK(shared_cost(strided(32, 0, 4, 0)).wavefronts == 1);     // a broadcast
  const SharedCost v16 = shared_cost(strided(32, 0, 16, 16));   // float4 per lane: 4 quarter-warp phases
  CHECK(v16.wavefronts == 4);
  CHECK(v16.ideal_wavefronts == 4);
  CHECK(shared_cost(strided(32, 0, 8, 8)).wavefronts == 2);     // float2: two half-warps
  CHECK(shared_cost(strided(8, 0, 4, 4)).ideal_wavefronts == 1);
  CHECK(shared_cost(strided(32, 0, 2, 2)).wavefronts == 1);     // bf16: two lanes share a word
}

TEST_CASE("global and shared costs equal a byte-by-byte statement of the rules", "[perf_model]") {
  rc::prop("random lanes, widths and addresses", [] {
    const std::uint32_t width = *rc::gen::element(1u, 2u, 4u, 8u, 16u);
    const int lanes = *rc::gen::inRange(1, 33);
    const std::uintptr_t span = *rc::gen::element(64, 512, 4096);
    std::vector<LaneAccess> acc;
    for (int l = 0; l < 32 && int(acc.size()) < lanes; ++l) {
      if (*rc::gen::inRange(0, 4) == 0) continue;  // an inactive lane
      acc.push_back({l, *rc::gen::inRange<std::uintptr_t>(0, span) / width * width, width});
    }
    std::set<std::uintptr_t> bytes, sectors;
    for (const LaneAccess& a : acc)
      for (std::uint32_t i = 0; i < a.bytes; ++i) {
        bytes.insert(a.address + i);
        sectors.insert((a.address + i) / 32);
      }
    const GlobalCost g = global_cost(acc);
    RC_ASSERT(g.requested_bytes == bytes.size());
    RC_ASSERT(g.sectors == sectors.size());
    // Shared: phases of 128 bytes, per bank the distinct words.
    const int per_phase = 128 / int(std::max(width, 4u));
    std::uint64_t wavefronts = 0, ideal = 0;
    for (int p = 0; p * per_phase < 32; ++p) {
      std::map<int, std::set<std::uintptr_t>> bank_words;
      bool any = false;
      for (const LaneAccess& a : acc) {
        if (a.lane < p * per_phase || a.lane >= (p + 1) * per_phase) continue;
        any = true;
        for (std::uint32_t i = 0; i < a.bytes; ++i) bank_words[int(((a.address + i) / 4) % 32)].insert((a.address + i) / 4);
      }
      if (!any) continue;
      std::size_t most = 0;
      for (const auto& [bank, words] : bank_words) most = std::max(most, words.size());
      wavefronts += most;
      ++ideal;
    }
    const SharedCost s = shared_cost(acc);
    RC_ASSERT(s.wavefronts == wavefronts);
    RC_ASSERT(s.ideal_wavefronts == ideal);
  });
}

TEST_CASE("occupancy: the occupancy calculator's limits on sm_90", "[perf_model]") {
  // 128 threads at 80 registers: 80*32 = 2560 per warp, 4 warps = 10240: 6 blocks by registers.
  Occupancy o = occupancy(kH200, {80, 0, 0}, 128, 0);
  CHECK(o.blocks_per_sm == 6);
  CHECK(o.limited_by == "registers");
  // 43,460 bytes of shared memory (the old attention kernel at head_dim 128): 233472 / 44484 = 5.
  o = occupancy(kH200, {80, 0, 0}, 128, 43460);
  CHECK(o.blocks_per_sm == 5);
  CHECK(o.limited_by == "shared memory");
  // 256 threads at 32 registers: 8 blocks fill 2048 threads.
  o = occupancy(kH200, {32, 0, 0}, 256, 0);
  CHECK(o.blocks_per_sm == 8);
  CHECK(o.limited_by == "threads");
  CHECK(o.warps_fraction == 1.0);
  // 32 threads at 16 registers: 32 blocks, the block limit.
  o = occupancy(kH200, {16, 0, 0}, 32, 0);
  CHECK(o.blocks_per_sm == 32);
  CHECK(o.limited_by == "blocks");
  // Register allocation rounds per warp to 256: 33 registers cost 40 per thread.
  CHECK(occupancy(kH200, {33, 0, 0}, 1024, 0).blocks_per_sm == 1);
  CHECK_THROWS_AS(occupancy(kH200, {255, 0, 0}, 1024, 0), std::invalid_argument);
  CHECK_THROWS_AS(occupancy(kH200, {32, 0, 0}, 128, 300000), std::invalid_argument);
}

TEST_CASE("roofline: a full launch runs at the HBM bandwidth, a small one at its SMs' share", "[perf_model]") {
  LaunchFigures f;
  f.blocks = 132 * 8;
  f.threads_per_block = 256;
  f.occupancy = occupancy(kH200, {32, 0, 0}, 256, 0);
  f.dram_bytes = f.ideal_bytes = 1e9;
  f.bytes_per_warp_load = 512;
  LaunchEstimate e = estimate(kH200, f);
  CHECK(e.bound == "memory");
  CHECK(e.bandwidth == Approx(kH200.hbm_bytes_per_s).epsilon(1e-12));
  CHECK(e.seconds == Approx(1e9 / 4.8e12 + kH200.kernel_gap_s).epsilon(1e-12));
  // One block: one SM at its cap (or its in-flight bytes over the latency).
  f.blocks = 1;
  e = estimate(kH200, f);
  const double one_sm = std::min(kH200.per_sm_bytes_per_s, 8.0 * 4 * 512 / kH200.dram_latency_s);
  CHECK(e.bandwidth == Approx(one_sm).epsilon(1e-12));
  CHECK(e.active_sms == 1);
  // Twice the ideal bytes (50% sector efficiency): half the floor's percentage.
  f.blocks = 132 * 8;
  f.dram_bytes = 2e9;
  e = estimate(kH200, f);
  CHECK(e.percent_of_floor() < 51.0);
  // A GEMM at 1 TFLOP on tensor cores over 1 MB: compute bound.
  f.dram_bytes = f.ideal_bytes = 1e6;
  f.flops = 1e12;
  f.tensor_cores = true;
  CHECK(estimate(kH200, f).bound == "compute");
}

TEST_CASE("the collector rebuilds warp-level instructions whatever order the threads ran in", "[perf_model]") {
  rc::prop("two warps, a coalesced load looped n times, a strided store, a divergent shared load", [] {
    const int iterations = *rc::gen::inRange(1, 4);
    struct Event {
      int thread;
      std::uintptr_t pc, address;
      std::uint32_t bytes;
      bool store;
      Space space;
    };
    std::vector<std::vector<Event>> per_thread(64);
    for (int t = 0; t < 64; ++t) {
      for (int i = 0; i < iterations; ++i)  // pc 0x10: thread t loads float t of row i (coalesced)
        per_thread[size_t(t)].push_back({t, 0x10, std::uintptr_t(0x100000 + i * 256 + t * 4), 4, false, Space::Global});
      per_thread[size_t(t)].push_back({t, 0x20, std::uintptr_t(0x200000 + t * 64), 4, true, Space::Global});
      if (t % 2 == 0)  // pc 0x30: even lanes only, a two-way bank conflict among them
        per_thread[size_t(t)].push_back({t, 0x30, std::uintptr_t(0x1000 + (t / 2) * 8 * 4), 4, false, Space::Shared});
    }
    // Interleave the threads' streams in a random order, each thread's own in order.
    // (A seeded engine, not 200 RapidCheck draws: inRange shrinks toward its
    // low end, which would stall on a finished thread.)
    std::mt19937 rng(*rc::gen::arbitrary<std::uint32_t>());
    std::vector<size_t> next(64, 0);
    BlockAccessCollector collector;
    int left = 0;
    for (const auto& s : per_thread) left += int(s.size());
    while (left > 0) {
      const int t = int(rng() % 64);
      if (next[size_t(t)] == per_thread[size_t(t)].size()) continue;
      const Event& e = per_thread[size_t(t)][next[size_t(t)]++];
      collector.add(e.thread, e.pc, e.address, e.bytes, e.store, e.space);
      --left;
    }
    AccessTotals totals;
    std::unordered_set<std::uint64_t> sectors;
    collector.finish(totals, sectors);
    // Loads: 2 warps x iterations instructions of 4 sectors; stores: 2 instructions of 32 sectors each.
    RC_ASSERT(totals.sites.at(0x10).instructions == std::uint64_t(2 * iterations));
    RC_ASSERT(totals.sites.at(0x10).sectors == std::uint64_t(2 * iterations * 4));
    RC_ASSERT(totals.sites.at(0x20).instructions == 2u);
    RC_ASSERT(totals.sites.at(0x20).sectors == 64u);
    // 16 even lanes per warp, words 8 apart: banks 0, 8, 16, 24 hold 4 words each.
    RC_ASSERT(totals.sites.at(0x30).wavefronts == 2u * 4u);
    RC_ASSERT(totals.global_requested_bytes == std::uint64_t(64 * 4 * iterations + 64 * 4));
    // Distinct sectors: loads cover 256 bytes per row (8 sectors) per iteration; stores 64 sectors.
    RC_ASSERT(sectors.size() == size_t(8 * iterations + 64));
  });
}

TEST_CASE("kernel resources: ptxas's table parsed and matched to launches", "[perf_model]") {
  const std::string tsv =
      "kernel\tregisters\tstatic_smem\tspill_stores\tspill_loads\tfile\n"
      "void astrai::cuda::(anonymous namespace)::swiglu_kernel<__nv_bfloat16>(float const*, int, __nv_bfloat16*)\t23\t0\t0\t0\t"
      "cuda/kernels/swiglu.cu\n"
      "void astrai::cuda::(anonymous namespace)::swiglu_kernel<float>(float const*, int, float*)\t22\t0\t0\t0\t"
      "cuda/kernels/swiglu.cu\n"
      "void astrai::cuda::(anonymous namespace)::sample_rows_kernel<256>(float const*, int)\t48\t0\t16\t24\t"
      "cuda/kernels/sample.cu\n"
      "void astrai::cuda::(anonymous namespace)::sample_rows_kernel<512>(float const*, int)\t62\t0\t0\t0\t"
      "cuda/kernels/sample.cu\n"
      "astrai::cuda::(anonymous namespace)::adjust_rows_kernel(float const*, float*, int)\t38\t0\t0\t0\t"
      "cuda/kernels/adjust_logits.cu\n";
  const auto kernels = parse_kernel_resources(tsv);
  REQUIRE(kernels.size() == 5);
  CHECK(kernels[0].base == "swiglu_kernel");
  CHECK(kernels[0].template_args == "__nv_bfloat16");
  CHECK(kernels[4].base == "adjust_rows_kernel");
  CHECK(kernels[4].template_args.empty());
  CHECK(find_kernel(kernels, "swiglu_kernel<Elem>", "f32", 256)->resources.registers == 22);
  CHECK(find_kernel(kernels, "swiglu_kernel<Elem>", "bf16", 256)->resources.registers == 23);
  const auto s = find_kernel(kernels, "sample_rows_kernel<kThreads>", "f32", 256);
  REQUIRE(s);
  CHECK(s->resources.spill_bytes == 40);
  CHECK(find_kernel(kernels, "adjust_rows_kernel", "f32", 128)->resources.registers == 38);
  CHECK_FALSE(find_kernel(kernels, "no_such_kernel", "f32", 128));
  // The emulator's demangled name of the instance: an exact match, or by base name and element type.
  CHECK(find_kernel(kernels, kernels[1].name, "bf16", 256)->resources.registers == 22);
  CHECK(find_kernel(kernels, "void astrai::cuda::(anonymous namespace)::swiglu_kernel<__nv_bfloat16>(float const*, "
                             "int, __nv_bfloat16*, int)", "bf16", 256)->resources.registers == 23);
  CHECK_THROWS_AS(parse_kernel_resources("header\nname\t1\t2\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_kernel_resources("header\nname\tx\t0\t0\t0\tf.cu\n"), std::runtime_error);
}
