// The host's share of a decode step: the real InferenceEngine, scheduler,
// KV-cache bookkeeping, per-request decoders (text streams, stop strings) and
// results, around an executor stand-in that does no model math, so that all
// the time measured is host work a GPU step would wait for.
//
//   bm_host_step/batch:B/vocab:V/sampling:S     B running requests, vocabulary V
//
// S names where the tokens come from:
//   greedy, top_p        device-sampling mode: the stand-in answers
//                        forward_and_sample with ready token ids, as the CUDA
//                        executor does when it samples on the GPU; the host
//                        only draws each row's uniform and handles the tokens.
//   host_greedy,         the reference sampler on the host (sample_rows, the
//   host_top_p           Executor default) over ready logits the stand-in
//                        holds: what every step costs when sampling is not on
//                        the device. top_p = temperature 0.7, top-k 50, top-p 0.9.
//
//   bm_host_step/batch:64/vocab:V/sampling:S/constrained:half
//                        the same with every other request constrained by a
//                        grammar (engine/grammar/, compile_constraint): the
//                        regex ("[a-z ]*", )* over the synthetic vocabulary,
//                        which a random walk of allowed tokens never ends. The
//                        scheduler fills each constrained request's mask once
//                        per step; in device mode the stand-in then reads
//                        the mask as DeviceSampler::stage copies it (one pass
//                        over its words) and answers an allowed token, since a
//                        disallowed one would end the request.
//
// Counter host_us_per_step: wall time per scheduler step (a step = one
// forward_and_sample call with every request decoding), measured over steps
// in steady state after every request is admitted and prefilled.
//
// Run: ninja -C build bench/bench_host_step && ./build/bench/bench_host_step
//      (add --benchmark_format=json for the medians' record)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/executor/executor.h"
#include "engine/grammar/compile_constraint.h"
#include "engine/grammar/token_vocabulary.h"
#include "engine/inference_engine.h"
#include "engine/kv_cache/contiguous_cache.h"
#include "engine/tokenizer/synthetic_tokenizer.h"

// OpenBLAS's own control (the library every build links). Nothing here
// multiplies matrices, but idle OpenBLAS worker threads spin on sched_yield
// and would take the second core from the measurement.
extern "C" void openblas_set_num_threads(int num_threads);

namespace {

using namespace astrai;

constexpr int kPromptTokens = 16;
constexpr int kContext = 4096;  // room for far more steps than a measurement takes

enum class Sampling { Greedy, TopP, HostGreedy, HostTopP };

bool on_device(Sampling s) { return s == Sampling::Greedy || s == Sampling::TopP; }

SamplingParams params_for(Sampling s) {
  SamplingParams p;
  p.seed = 1;
  if (s == Sampling::Greedy || s == Sampling::HostGreedy) {
    p.temperature = 0.0f;
  } else {
    p.temperature = 0.7f;
    p.top_k = 50;
    p.top_p = 0.9f;
  }
  return p;
}

// A model shape whose only large dimension is the vocabulary: the KV cache
// and everything else the host touches stay small, as they are per token
// (the K/V of a real model live on the device).
ModelConfig stand_in_config(int vocab) {
  return ModelConfig{.dim = 8, .hidden_dim = 8, .n_layers = 1, .n_heads = 1, .n_kv_heads = 1, .vocab_size = vocab,
                     .max_seq_len = kContext};
}

// The executor stand-in. In device mode it returns token ids drawn from a
// fixed pseudo-random table (printable pieces, so the text streams do real
// work); in host mode it holds rows of random logits and runs the reference
// sampler over as many of them as the step wants.
class StandInExecutor final : public Executor {
 public:
  StandInExecutor(int vocab, int max_rows, Sampling sampling)
      : config_(stand_in_config(vocab)), device_(on_device(sampling)) {
    std::mt19937 rng(7);
    // Normal pieces start after <unk>, <s>, </s> and the 256 byte pieces.
    std::uniform_int_distribution<int> piece(kSyntheticTokenizerMinVocab, vocab - 1);
    ids_.resize(4096);
    for (int& id : ids_) id = piece(rng);
    if (!device_) {
      std::normal_distribution<float> logit(0.0f, 3.0f);
      logits_.resize(size_t(max_rows) * size_t(vocab));
      for (float& x : logits_) x = logit(rng);
    }
  }

  const ModelConfig& config() const override { return config_; }
  std::string name() const override { return "host-step stand-in"; }
  xt::xtensor<float, 2> forward(std::span<const BatchToken>, KVCacheView&) override {
    throw std::logic_error("the stand-in only answers forward_and_sample");
  }
  std::vector<SampledToken> forward_and_sample(std::span<const BatchToken>, KVCacheView&,
                                               std::span<const RowSampling> rows) override {
    while (!open_.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    ++steps_;
    if (!device_) return sample_rows(std::span<const float>(logits_).first(rows.size() * size_t(config_.vocab_size)),
                                     size_t(config_.vocab_size), rows);
    std::vector<SampledToken> tokens(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      const int wanted = ids_[next_++ % ids_.size()];
      tokens[r].token = rows[r].mask.empty() ? wanted : allowed_near(rows[r].mask, wanted);
    }
    return tokens;
  }
  long steps() const { return steps_.load(); }
  // No step runs before this: every request is submitted before the first
  // one decodes, so none reaches the context while the others are queued.
  void open() { open_.store(true); }

  // The first allowed token at or after `wanted` (wrapping), never one of
  // the control ids 0..2 (<unk>, <s>, </s>: an end-of-sequence would end the
  // constraint): what a sampler restricted to the mask might answer. The staging copy DeviceSampler::stage makes of each mask is
  // taken here too, so the host's mask traffic is in the figure.
  int allowed_near(std::span<const std::uint32_t> mask, int wanted) {
    staged_.assign(mask.begin(), mask.end());
    const int vocab = config_.vocab_size;
    for (int k = 0; k < vocab; ++k) {
      const int id = (wanted + k) % vocab;
      if (id >= 3 && (staged_[size_t(id) / 32] >> (id % 32)) & 1u) return id;
    }
    return wanted;  // nothing allowed: the scheduler ends such a request before it gets here
  }

 private:
  ModelConfig config_;
  bool device_;
  std::vector<int> ids_;
  size_t next_ = 0;
  std::vector<float> logits_;
  std::vector<std::uint32_t> staged_;
  std::atomic<long> steps_{0};
  std::atomic<bool> open_{false};
};

// The constraint of the constrained variants: a list of quoted lower-case
// words that never has to end, compiled once for the synthetic vocabulary.
// The vocabulary has no end-of-sequence ids: the list can end after any
// item, and a sampler that drew the EOS there would end the request, which
// the measurement needs running.
std::shared_ptr<const grammar::CompiledConstraint> bench_constraint(const Tokenizer& tokenizer) {
  const grammar::ConstraintSpec spec{grammar::ConstraintSpec::Kind::Regex, R"(("[a-z ]*", )*)", {}};
  const grammar::TokenVocabulary vocabulary = grammar::TokenVocabulary::from_tokenizer(tokenizer);
  auto compiled = grammar::compile_constraint(spec, grammar::TokenVocabulary(vocabulary.body().token_bytes, {}));
  // The first mask of a fresh compiled constraint fills its token cache for
  // the start (milliseconds): done here, so that submitting the requests is
  // quick and none runs far ahead of the others.
  std::vector<std::uint32_t> mask(grammar::bitmask_words(vocabulary.size()));
  compiled->start()->fill_next_token_mask(mask);
  return compiled;
}

void bm_host_step(benchmark::State& state, int batch, int vocab, Sampling sampling, bool constrained = false) {
  auto tokenizer = std::make_shared<const Tokenizer>(make_synthetic_tokenizer(vocab));
  auto executor = std::make_unique<StandInExecutor>(vocab, batch, sampling);
  StandInExecutor& stand_in = *executor;
  EngineConfig config;
  config.scheduler.max_running_tasks = batch;
  config.scheduler.max_tokens_per_step = std::max(batch, 256);
  auto cache = std::make_unique<ContiguousCache>(stand_in.config(), batch);
  InferenceEngine engine(std::move(executor), std::move(cache), tokenizer, config);

  const auto constraint = constrained ? bench_constraint(*tokenizer) : nullptr;
  std::vector<std::shared_ptr<GenerateResult>> results;
  for (int r = 0; r < batch; ++r) {
    GenerationRequest request;
    request.prompt_ids = std::vector<int>(kPromptTokens, kSyntheticTokenizerMinVocab + r % 95);
    request.max_tokens = kContext - kPromptTokens;
    request.sampling = params_for(sampling);
    // Never matched (no piece holds a control byte or '<' twice), but every
    // piece is checked, and a '<' is held back until the next one.
    request.stop = {"\x01\x02", "<<"};
    request.ignore_eos = true;
    if (r % 2 == 1) request.constraint = constraint;  // every other request
    results.push_back(engine.generate_with_request(std::move(request)));
  }
  stand_in.open();
  // Steady state: every request admitted and prefilled.
  while (engine.get_stats().active_tasks < batch || engine.get_stats().total_tokens < uint64_t(batch) * 4) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    for (const auto& result : results)
      if (result->done()) {  // a request that ended cannot be part of the batch measured
        const TaskOutput out = result->wait();
        const SchedulerStats stats = engine.get_stats();
        state.SkipWithError(("a request ended before the measurement: " + std::string(to_string(out.reason)) + " " +
                             out.error + " after " + std::to_string(out.tokens.size()) + " tokens; active " +
                             std::to_string(stats.active_tasks) + ", tokens " + std::to_string(stats.total_tokens))
                                .c_str());
        engine.shutdown();
        return;
      }
  }

  // Host sampling at batch 256 and a 128K vocabulary takes a good part of a
  // second per step: fewer steps per iteration there keep the run short.
  const long steps_per_iteration = on_device(sampling) ? 20 : 3;
  double total_seconds = 0.0;
  long total_steps = 0;
  for (auto _ : state) {
    const long first = stand_in.steps();
    const auto start = std::chrono::steady_clock::now();
    while (stand_in.steps() < first + steps_per_iteration) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      if (engine.get_stats().active_tasks < batch) {  // a request ended: no longer the batch asked for
        state.SkipWithError("a request ended during the measurement (raise kContext)");
        engine.shutdown();
        return;
      }
    }
    const long steps = stand_in.steps() - first;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds / double(steps));  // one iteration reported as one step
    total_seconds += seconds;
    total_steps += steps;
  }
  state.counters["host_us_per_step"] = total_seconds / double(std::max(total_steps, 1L)) * 1e6;
  // The most tokens per second the host could deliver with an instant GPU.
  state.counters["host_bound_tok_per_s"] = double(total_steps) * batch / std::max(total_seconds, 1e-9);
  engine.shutdown();
}

void register_all() {
  const std::pair<const char*, Sampling> modes[] = {{"greedy", Sampling::Greedy},
                                                    {"top_p", Sampling::TopP},
                                                    {"host_greedy", Sampling::HostGreedy},
                                                    {"host_top_p", Sampling::HostTopP}};
  for (const int vocab : {32000, 128256})
    for (const int batch : {1, 64, 256})
      for (const auto& [name, mode] : modes) {
        const std::string full = "bm_host_step/batch:" + std::to_string(batch) + "/vocab:" + std::to_string(vocab) +
                                 "/sampling:" + name;
        benchmark::RegisterBenchmark(full.c_str(),
                                     [=](benchmark::State& state) { bm_host_step(state, batch, vocab, mode); })
            ->UseManualTime()
            ->Iterations(10)
            ->Unit(benchmark::kMicrosecond);
      }
  // Batch 64, half the requests constrained, beside the unconstrained runs above.
  for (const int vocab : {32000, 128256})
    for (const auto& [name, mode] : modes) {
      const std::string full = "bm_host_step/batch:64/vocab:" + std::to_string(vocab) + "/sampling:" + name +
                               "/constrained:half";
      benchmark::RegisterBenchmark(full.c_str(),
                                   [=](benchmark::State& state) { bm_host_step(state, 64, vocab, mode, true); })
          ->UseManualTime()
          ->Iterations(10)
          ->Unit(benchmark::kMicrosecond);
    }
}

}  // namespace

int main(int argc, char** argv) {
  if (!std::getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
