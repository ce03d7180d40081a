// The adjust_logits case: launch_adjust_rows (cuda/kernels/adjust_logits.cu)
// against apply_adjustments() of reference/sampling/penalties.cpp, element for
// element. Each row draws its logits (random_logit_row: every scale from
// subnormal to FLT_MAX, ties, -inf masks) and a penalty rule (repetition,
// frequency, presence, a logit_bias with bans) over a random history; the
// reference's own AdjustmentList turns the rule into the adjustments both
// sides apply, so the case checks the kernel's arithmetic and indexing, not
// the list's making (reference/sampling tests that).
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "cuda/kernel_cases/device_arrays.h"
#include "cuda/kernel_cases/kernel_case.h"
#include "cuda/kernel_cases/sampling_rows.h"
#include "cuda/kernels/kernels.h"
#include "reference/sampling/penalties.h"

namespace astrai::cuda::cases {
namespace {

template <typename T>
T one_of(std::mt19937& rng, std::initializer_list<T> choices) {
  return *(choices.begin() + long(rng() % uint32_t(choices.size())));
}

// A rule with every penalty drawn (one row in four none at all: an empty
// list, which the kernel must leave a plain copy), and its adjustment list
// after a random prompt and output over the vocabulary.
AdjustmentList random_adjustments(int vocab, std::mt19937& rng, float& repetition_penalty) {
  SamplingParams p;
  std::vector<int> prompt, generated;
  std::uniform_int_distribution<int> id(0, vocab - 1);
  if (rng() % 4 != 0) {
    p.presence_penalty = one_of(rng, {0.0f, 0.5f, -1.5f});
    p.frequency_penalty = one_of(rng, {0.0f, 0.25f, 2.0f});
    p.repetition_penalty = one_of(rng, {1.0f, 1.3f, 0.6f});
    for (int i = int(rng() % 4); i > 0; --i) {
      const int token = id(rng);
      bool taken = false;
      for (const auto& e : p.logit_bias) taken = taken || e.first == token;
      if (!taken) p.logit_bias.emplace_back(token, one_of(rng, {kLogitBiasBan, 3.5f, -2.25f, 100.0f}));
    }
    for (int i = int(rng() % 13); i > 0; --i) prompt.push_back(id(rng));
    for (int i = int(rng() % 21); i > 0; --i) generated.push_back(id(rng));
  }
  repetition_penalty = p.repetition_penalty;
  AdjustmentList list(p, prompt);
  for (const int token : generated) list.add_generated(token);
  return list;
}

struct AdjustRun final : KernelRun {
  int rows, vocab;
  std::vector<float> logits;
  std::vector<AdjustmentList> lists;
  std::vector<float> penalties;  // each row's repetition penalty
  DeviceBuffer d_logits, d_adjusted, d_params, d_adjustments;

  explicit AdjustRun(const KernelShape& s) : rows(s["rows"]), vocab(s["vocab"]) {
    std::mt19937 rng(s.seed);
    std::vector<DeviceSamplingRow> params;
    std::vector<DeviceLogitAdjustment> adjustments;
    for (int r = 0; r < rows; ++r) {
      const std::vector<float> row = random_logit_row(vocab, rng, /*allow_bad=*/false);
      logits.insert(logits.end(), row.begin(), row.end());
      float penalty = 1.0f;
      lists.push_back(random_adjustments(vocab, rng, penalty));
      penalties.push_back(penalty);
      DeviceSamplingRow p;
      p.adjust_begin = int(adjustments.size());
      p.adjust_count = int(lists.back().adjustments().size());
      p.repetition_penalty = penalty;
      params.push_back(p);
      for (const LogitAdjustment& a : lists.back().adjustments())
        adjustments.push_back({a.token, (a.banned ? kAdjustBanned : 0) | (a.repetition ? kAdjustRepetition : 0),
                               a.offset});
    }
    d_logits = test::upload(logits, DType::Float32);
    d_adjusted = test::nan_filled(logits.size(), DType::Float32);
    d_params = test::upload_structs(params, "sampling parameters");
    d_adjustments = test::upload_structs(adjustments, "logit adjustments");
    // The row's copy, read and written, and each adjustment with its logit.
    bytes = double(logits.size()) * 8.0 + double(adjustments.size()) * (sizeof(DeviceLogitAdjustment) + 8.0);
  }
  void launch(int variant, cudaStream_t stream) override {
    if (variant != 1) throw std::invalid_argument("adjust_logits has no kernel variant " + std::to_string(variant));
    launch_adjust_rows(d_logits.as<float>(), d_adjusted.as<float>(), rows, vocab, d_params.as<DeviceSamplingRow>(),
                       d_adjustments.as<DeviceLogitAdjustment>(), stream);
  }
  // The adjusted rows, then the raw logits as the launch left them (they must
  // be untouched: logprobs read them after the adjustment).
  std::vector<float> result() override {
    std::vector<float> out = test::download(d_adjusted, logits.size(), DType::Float32);
    const std::vector<float> raw = test::download(d_logits, logits.size(), DType::Float32);
    out.insert(out.end(), raw.begin(), raw.end());
    return out;
  }
  std::vector<float> expected() override {
    std::vector<float> out = logits;
    for (int r = 0; r < rows; ++r)
      apply_adjustments(std::span<float>(out.data() + size_t(r) * size_t(vocab), size_t(vocab)),
                        lists[size_t(r)].adjustments(), penalties[size_t(r)]);
    out.insert(out.end(), logits.begin(), logits.end());
    return out;
  }
};

}  // namespace

KernelCase adjust_logits_case() {
  return {"adjust_logits", "cuda/kernels/adjust_logits.cu", "apply_adjustments() in reference/sampling/penalties.cpp",
          1,
          {0.0, 0.0,
           "exact: adjusted_logit()'s IEEE float64 divide or multiply and add, correctly rounded on both sides (the "
           "kernel's __ddiv_rn/__dmul_rn/__dadd_rn: nothing fused), then one rounding to float; a ban is -inf on both"},
          [](const Pick& pick) {  // rows shorter and longer than the block's 256 threads
            return KernelShape{DType::Float32, pick_seed(pick),
                               {{"rows", pick(1, 6)}, {"vocab", pick_vocab(pick, {1, 2, 255, 256, 257, 1025, 33000})}}};
          },
          {KernelShape{DType::Float32, 7, {{"rows", 64}, {"vocab", 128256}}}},
          [](const KernelShape& s) { return std::make_unique<AdjustRun>(s); }};
}

}  // namespace astrai::cuda::cases
