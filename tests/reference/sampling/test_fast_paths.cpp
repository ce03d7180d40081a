// The sampler's fast paths (sampler.cpp: greedy's one pass, the top-k floor,
// top-p's selection before sorting, the tokens too far below the top to
// matter) against the rule computed the slow way, here: every finite token
// tempered in float64, ALL of them sorted more likely first, the first k, then
// the softmax of those in that order and the shortest prefix whose running
// mass reaches p. The fast paths promise the same kept set and the same bits,
// so every comparison below is exact (==), and a property cannot fail by
// chance: there is no tolerance to cross.
//
// Rows are long enough to take the fast paths (top-k's floor needs
// 32k <= n; top-p selects from 128 candidates; greedy's chunks are 2048
// logits), with many ties, -inf masks (whole stretches of them), huge and tiny
// values, and spreads wide enough that tokens fall far below the top.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "reference/sampling/rng.h"
#include "reference/sampling/sampler.h"

using astrai::Candidates;
using astrai::SamplingParams;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- the slow rule ----

struct Token {
  int id;
  double z;  // tempered logit
};

bool ahead(const Token& a, const Token& b) { return a.z > b.z || (a.z == b.z && a.id < b.id); }

// Top-k then top-p over tokens, by sorting them all; the survivors more likely first.
std::vector<Token> slow_cut(std::vector<Token> tokens, int k, float p) {
  std::sort(tokens.begin(), tokens.end(), ahead);
  if (k > 0 && tokens.size() > std::size_t(k)) tokens.resize(std::size_t(k));
  if (p < 1.0f) {
    const double top = tokens.front().z;
    std::vector<double> w;
    double total = 0.0;
    for (const Token& t : tokens) {
      w.push_back(std::exp(t.z - top));
      total += w.back();
    }
    double mass = 0.0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      mass += w[i] / total;
      if (mass >= static_cast<double>(p)) {
        tokens.resize(i + 1);
        break;
      }
    }
  }
  return tokens;
}

// The kept tokens in ascending id order (what kept_candidates returns).
std::vector<Token> slow_kept(const std::vector<float>& logits, const SamplingParams& params) {
  std::vector<Token> tokens;
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != -kInf) tokens.push_back({int(i), double(logits[i]) / double(params.temperature)});
  std::vector<Token> kept = slow_cut(tokens, params.top_k, params.top_p);
  std::sort(kept.begin(), kept.end(), [](const Token& a, const Token& b) { return a.id < b.id; });
  return kept;
}

// The final distribution over the vocabulary: softmax over the kept tokens in
// id order, maximum first subtracted.
std::vector<double> slow_distribution(const std::vector<float>& logits, const std::vector<Token>& kept) {
  double top = -std::numeric_limits<double>::infinity();
  for (const Token& t : kept) top = std::max(top, t.z);
  std::vector<double> w;
  double total = 0.0;
  for (const Token& t : kept) {
    w.push_back(std::exp(t.z - top));
    total += w.back();
  }
  std::vector<double> p(logits.size(), 0.0);
  for (std::size_t i = 0; i < kept.size(); ++i) p[std::size_t(kept[i].id)] = w[i] / total;
  return p;
}

// The first maximum by a plain loop (-0 and +0 equal, as == has them).
std::size_t first_argmax(const std::vector<float>& logits) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// ---- rows ----

// A row of n logits in one of seven styles, from a seed: 0 a few integer
// values (ties everywhere), 1 hundredths in [-20, 20] (some ties), 2 a wide
// spread (values up to +-1e4, so most of the row lies far below the top at
// any temperature), 3 extremes (+-3e38, +-1e30, denormals, +-0, 1, -1), 4
// two levels, 0 and -30 or -1000 (masses exact or nearly: ties at every cut,
// the mass meeting p within rounding). Then -inf masks: none, scattered,
// whole stretches, nearly all, or all but a few tokens; token `keep` is never
// masked, so the row always has a finite logit. Style 5 is bm_sample's: uniform
// in [-5, 5], continuous, hardly a tie; style 6 is uniform in [0, 1) with 1%
// at -35, so that top-p's logit buckets (the range over 4096) each hold many
// distinct values.
std::vector<float> make_row(int n, int style, int masking, std::uint64_t seed) {
  std::uint64_t s = seed;
  const auto next = [&s] { return astrai::splitmix64_next(s); };
  const auto below = [&next](std::uint64_t m) { return next() % m; };
  std::vector<float> row(std::size_t(n), 0.0f);
  const int levels = 2 + int(below(5));
  static const float kExtremes[] = {3.0e38f, -3.0e38f, 1.0e30f, -1.0e30f, 1.0e-45f, -1.0e-45f, 1.0e-38f,
                                    0.0f,    -0.0f,    1.0f,    -1.0f,    1.0e-30f, 2.5f,     -2.5f};
  for (float& x : row) {
    switch (style) {
      case 0: x = float(int(below(std::uint64_t(levels)))); break;
      case 1: x = float(int(below(4001)) - 2000) / 100.0f; break;
      case 2: x = float(int(below(20001)) - 10000) * (below(4) == 0 ? 1.0f : 0.01f); break;
      case 3: x = kExtremes[below(sizeof kExtremes / sizeof kExtremes[0])]; break;
      case 4: x = below(4) == 0 ? 0.0f : levels % 2 == 0 ? -30.0f : -1000.0f; break;
      case 5: x = float(next() >> 40) / 16777216.0f * 10.0f - 5.0f; break;  // bm_sample's row
      default: x = below(100) == 0 ? -35.0f : float(next() >> 40) / 16777216.0f; break;
    }
  }
  const std::size_t keep = std::size_t(below(std::uint64_t(n)));
  if (masking == 1) {
    for (std::size_t i = 0; i < row.size(); ++i)
      if (i != keep && below(10) == 0) row[i] = -kInf;
  } else if (masking == 2) {  // stretches: some chunks hold no finite logit at all
    for (std::size_t i = 0; i < row.size();) {
      const std::size_t length = 1 + below(std::uint64_t(n / 4 + 1));
      const bool masked = below(2) == 0;
      for (std::size_t end = std::min(row.size(), i + length); i < end; ++i)
        if (masked && i != keep) row[i] = -kInf;
    }
  } else if (masking == 3) {  // nearly everything masked
    for (std::size_t i = 0; i < row.size(); ++i)
      if (i != keep && below(20) != 0) row[i] = -kInf;
  } else if (masking == 4) {  // all but a few: top-k's chunks are nearly all empty
    std::vector<float> few(row.size(), -kInf);
    few[keep] = row[keep];
    for (std::uint64_t extra = below(8); extra > 0; --extra) {
      const std::size_t i = std::size_t(below(std::uint64_t(n)));
      few[i] = row[i];
    }
    row = few;
  }
  return row;
}

rc::Gen<std::vector<float>> gen_row(int max_n) {
  return rc::gen::apply(make_row, rc::gen::inRange(1, max_n + 1), rc::gen::inRange(0, 7), rc::gen::inRange(0, 5),
                        rc::gen::arbitrary<std::uint64_t>());
}

// k: off, 1, a few, small enough for the floor (n / 32), or about n.
rc::Gen<int> gen_top_k(int n) {
  return rc::gen::oneOf(rc::gen::just(0), rc::gen::just(1), rc::gen::inRange(2, 9),
                        rc::gen::inRange(1, std::max(2, n / 32 + 1)), rc::gen::inRange(std::max(1, n - 3), n + 4));
}

// p in (0, 1]: steps of 1/1000, 1 itself, and a few that land on exact masses.
rc::Gen<float> gen_top_p() {
  return rc::gen::oneOf(rc::gen::map(rc::gen::inRange(1, 1001), [](int i) { return float(i) / 1000.0f; }),
                        rc::gen::element(1.0f, 0.5f, 0.25f, 0.75f, 0.9f, 0.999f, std::nextafter(1.0f, 0.0f)));
}

// Temperatures from 0.05 to 3, and extreme ones.
rc::Gen<float> gen_temperature() {
  return rc::gen::oneOf(rc::gen::map(rc::gen::inRange(5, 301), [](int i) { return float(i) / 100.0f; }),
                        rc::gen::element(1.0f, 1.0e-30f, 1.0e-3f, 1.0e30f, 1.0e-45f));
}

// kept_candidates and probabilities equal the slow rule, bit for bit.
void check_against_slow_rule(const std::vector<float>& logits, const SamplingParams& params) {
  const std::vector<Token> want = slow_kept(logits, params);
  const Candidates got = astrai::kept_candidates(logits, params);
  RC_ASSERT(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    RC_ASSERT(got[i].id == want[i].id);
    RC_ASSERT(same_bits(got[i].logit, want[i].z));
  }
  const std::vector<double> p = astrai::probabilities(logits, params), q = slow_distribution(logits, want);
  RC_ASSERT(p.size() == q.size());
  for (std::size_t i = 0; i < p.size(); ++i) RC_ASSERT(same_bits(p[i], q[i]));
}

}  // namespace

TEST_CASE("the fast paths keep exactly what sorting the whole row keeps", "[sampling][fast]") {
  rc::prop("kept_candidates and probabilities equal the full-sort rule bit for bit", [] {
    const std::vector<float> logits = *gen_row(3000);
    const int n = int(logits.size());
    const SamplingParams params{*gen_temperature(), *gen_top_k(n), *gen_top_p(), std::nullopt};
    check_against_slow_rule(logits, params);
  });
  rc::prop("top-p alone over long rows (the selection before the sort)", [] {
    const std::vector<float> logits = *gen_row(4000);
    const SamplingParams params{*gen_temperature(), 0, *gen_top_p(), std::nullopt};
    check_against_slow_rule(logits, params);
  });
  rc::prop("top-k with a floor (k <= n / 32), then top-p", [] {
    const std::vector<float> logits = *gen_row(4000);
    const int n = int(logits.size());
    const int k = *rc::gen::inRange(1, std::max(2, n / 32 + 1));
    const SamplingParams params{*gen_temperature(), k, *gen_top_p(), std::nullopt};
    check_against_slow_rule(logits, params);
  });
  rc::prop("a draw lands in the kept set", [] {
    const std::vector<float> logits = *gen_row(2000);
    const int n = int(logits.size());
    const SamplingParams params{*gen_temperature(), *gen_top_k(n), *gen_top_p(), std::nullopt};
    const std::vector<double> q = slow_distribution(logits, slow_kept(logits, params));
    const double u = double(*rc::gen::inRange<std::uint64_t>(0, std::uint64_t(1) << 53)) * 0x1p-53;
    RC_ASSERT(q[std::size_t(astrai::sample_with_uniform(logits, params, u))] > 0.0);
  });
}

TEST_CASE("keep_top_k and keep_top_p on candidates in any order equal a full sort", "[sampling][fast]") {
  rc::prop("the survivors, more likely first, equal the sorted prefix", [] {
    const std::vector<float> logits = *gen_row(3000);
    const int n = int(logits.size());
    const int k = *gen_top_k(n);
    const float p = *gen_top_p();
    std::vector<Token> tokens;
    Candidates candidates;
    for (std::size_t i = 0; i < logits.size(); ++i)
      if (logits[i] != -kInf) {
        tokens.push_back({int(i), double(logits[i])});
        candidates.push_back({int(i), double(logits[i])});
      }
    // Any order in: reversed, or rotated by a drawn amount.
    if (*rc::gen::arbitrary<bool>())
      std::reverse(candidates.begin(), candidates.end());
    else
      std::rotate(candidates.begin(),
                  candidates.begin() + *rc::gen::inRange<std::ptrdiff_t>(0, std::ptrdiff_t(candidates.size())),
                  candidates.end());
    astrai::keep_top_k(candidates, k);
    astrai::keep_top_p(candidates, p);
    std::vector<Token> want = slow_cut(tokens, k, p);
    if (p >= 1.0f && (k == 0 || std::size_t(k) >= tokens.size())) {  // nothing cut, the input's order: as sets
      std::sort(candidates.begin(), candidates.end(), astrai::more_likely);
      std::sort(want.begin(), want.end(), ahead);
    }
    RC_ASSERT(candidates.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      RC_ASSERT(candidates[i].id == want[i].id);
      RC_ASSERT(same_bits(candidates[i].logit, want[i].z));
    }
  });
}

TEST_CASE("top-p cuts where the mass meets p exactly, and ties cut in two, by hand", "[sampling][fast]") {
  // 256 tokens: 128 at 0 and 128 at -1000 (probability exactly 0), so each of
  // the first 128 has mass exactly 1/128 and p = 0.5 is reached exactly after
  // 64 of them: they are the 64 lowest ids at 0.
  std::vector<float> logits(256, -1000.0f);
  for (int i = 0; i < 256; i += 2) logits[std::size_t(i)] = 0.0f;
  const Candidates kept = astrai::kept_candidates(logits, SamplingParams{1.0f, 0, 0.5f, std::nullopt});
  REQUIRE(kept.size() == 64);
  for (std::size_t i = 0; i < kept.size(); ++i) CHECK(kept[i].id == int(2 * i));
  // The same at -30: the low tokens add about 1e-13 to the total, less than
  // the selection's rounding bound, so it cannot tell the 64th token's cut from
  // the 65th's and sorts everything; the result is the full sort's.
  std::vector<float> near(256, -30.0f);
  for (int i = 0; i < 256; i += 2) near[std::size_t(i)] = 0.0f;
  const SamplingParams half{1.0f, 0, 0.5f, std::nullopt};
  const std::vector<Token> want = slow_kept(near, half);
  const Candidates got = astrai::kept_candidates(near, half);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i].id == want[i].id);
  // 300 tokens at 1, 2000 below at 0: p = 0.1 cuts inside the top tie, which
  // the selection resolves by id.
  std::vector<float> tied(2300, 0.0f);
  for (int i = 0; i < 300; ++i) tied[std::size_t(7 * i + 3)] = 1.0f;
  const SamplingParams nucleus{1.0f, 0, 0.1f, std::nullopt};
  const Candidates first = astrai::kept_candidates(tied, nucleus);
  REQUIRE(!first.empty());
  for (std::size_t i = 0; i < first.size(); ++i) CHECK(first[i].id == int(7 * i + 3));
  CHECK(first.size() == slow_kept(tied, nucleus).size());
}

TEST_CASE("greedy's one pass is the plain-loop first maximum on long rows", "[sampling][fast][temperature]") {
  rc::prop("T = 0 keeps the first maximum, with its own logit", [] {
    std::vector<float> logits = *gen_row(9000);
    // The maximum again further on, in another chunk, and a zero of the other sign.
    const std::size_t best = first_argmax(logits);
    if (*rc::gen::arbitrary<bool>() && logits[best] != -kInf) {
      const std::size_t later = *rc::gen::inRange(best, logits.size());
      logits[later] = logits[best] == 0.0f ? -logits[best] : logits[best];
    }
    const int k = *rc::gen::inRange(0, 60);
    const Candidates kept = astrai::kept_candidates(logits, SamplingParams{0.0f, k, *gen_top_p(), std::nullopt});
    RC_ASSERT(kept.size() == 1u);
    RC_ASSERT(std::size_t(kept[0].id) == first_argmax(logits));
    RC_ASSERT(same_bits(kept[0].logit, double(logits[std::size_t(kept[0].id)])));
  });
  // The maximum is zero twice, +0 first: token 10 and its +0, though the lanes
  // of the scan may meet the -0 (token 20) first.
  std::vector<float> zeros(64, -1.0f);
  zeros[10] = 0.0f;
  zeros[20] = -0.0f;
  const Candidates first = astrai::kept_candidates(zeros, SamplingParams{0.0f, 50, 1.0f, std::nullopt});
  REQUIRE(first.size() == 1u);
  CHECK(first[0].id == 10);
  CHECK_FALSE(std::signbit(first[0].logit));
}

TEST_CASE("every path rejects a bad row naming its first bad logit", "[sampling][fast][errors]") {
  using Catch::Matchers::Contains;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<SamplingParams> every_path = {
      {0.0f, 50, 1.0f, 1},  // greedy
      {0.7f, 2, 0.9f, 1},   // the top-k floor
      {0.7f, 0, 0.9f, 1},   // top-p selection
      {0.7f, 0, 1.0f, 1},   // everything kept
  };
  for (const SamplingParams& params : every_path) {
    for (const std::size_t at : {std::size_t(0), std::size_t(2047), std::size_t(2048), std::size_t(4999)}) {
      std::vector<float> row(5000, 1.0f);
      row[at] = nan;
      if (at + 1 < row.size()) row[at + 1] = kInf;  // a second bad logit after the first
      CHECK_THROWS_WITH(astrai::sample(row, params), Contains("token " + std::to_string(at) + " is NaN"));
      row[at] = kInf;
      CHECK_THROWS_WITH(astrai::sample(row, params), Contains("token " + std::to_string(at) + " is +inf"));
    }
    CHECK_THROWS_WITH(astrai::sample(std::vector<float>(5000, -kInf), params), Contains("every one of the 5000"));
    CHECK_THROWS_WITH(astrai::sample(std::vector<float>{}, params), Contains("empty"));
  }
}
