#include "cuda/perf_model/warp_access.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

namespace astrai::cuda::perf {

GlobalCost global_cost(std::span<const LaneAccess> lanes) {
  // At most 32 lanes: sorting small arrays beats any set.
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;  // [begin, end)
  std::vector<std::uintptr_t> sectors;
  ranges.reserve(lanes.size());
  for (const LaneAccess& a : lanes) {
    if (a.bytes == 0) continue;
    ranges.emplace_back(a.address, a.address + a.bytes);
    for (std::uintptr_t s = a.address / 32; s <= (a.address + a.bytes - 1) / 32; ++s) sectors.push_back(s);
  }
  std::sort(ranges.begin(), ranges.end());
  GlobalCost cost;
  std::uintptr_t covered_to = 0;
  for (const auto& [begin, end] : ranges) {  // the union's length: lanes reading the same bytes count once
    const std::uintptr_t from = std::max(begin, covered_to);
    if (end > from) cost.requested_bytes += end - from;
    covered_to = std::max(covered_to, end);
  }
  std::sort(sectors.begin(), sectors.end());
  cost.sectors = std::uint64_t(std::unique(sectors.begin(), sectors.end()) - sectors.begin());
  return cost;
}

SharedCost shared_cost(std::span<const LaneAccess> lanes) {
  SharedCost cost;
  std::uint32_t width = 0;
  for (const LaneAccess& a : lanes) width = std::max(width, a.bytes);
  if (width == 0) return cost;
  // Lanes per phase: a phase moves at most 128 bytes.
  const int per_phase = width <= 4 ? 32 : width == 8 ? 16 : 8;
  for (int phase = 0; phase < 32 / per_phase; ++phase) {
    std::vector<std::uintptr_t> words;  // the distinct 4-byte words this phase touches
    for (const LaneAccess& a : lanes)
      if (a.lane / per_phase == phase && a.bytes > 0)
        for (std::uintptr_t w = a.address / 4; w <= (a.address + a.bytes - 1) / 4; ++w) words.push_back(w);
    if (words.empty()) continue;
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    std::array<std::uint64_t, 32> per_bank{};
    for (std::uintptr_t w : words) ++per_bank[w % 32];
    cost.wavefronts += *std::max_element(per_bank.begin(), per_bank.end());
    cost.ideal_wavefronts += 1;
  }
  return cost;
}

}  // namespace astrai::cuda::perf
