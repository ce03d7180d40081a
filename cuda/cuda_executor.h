// The forward pass on one GPU, behind the Executor interface: the same
// contract as astrai::forward (reference/forward.h), computing every layer
// with the kernels of cuda/kernels/ and cuBLASLt GEMMs, reading and writing
// K/V in a DevicePageCache. Only the logits of the rows that want them are
// computed; forward() copies them back, forward_and_sample() samples them on
// the device (the reference sampler's rule, exactly: docs/cuda.md, "Sampling
// on the device") and copies back token ids.
//
// Per layer (R rows; f32 = float32, T = the storage dtype):
//   h[R,dim] T     = rmsnorm(x += ffn_out of the previous layer)   residual_rmsnorm.cu
//   qkv[R,..] f32  = h [Wq;Wk;Wv]^T                                 cuBLASLt
//   (+ bias, per-head q/k RMSNorm where the model has them), q
//   rotated in place, K (rotated) and V written to their pages      rope_kv_write.cu
//   partial softmax per split: decode rows / prefill tiles          decode_attention.cu, prefill_attention.cu
//   attn[R,q_dim] T = log-sum-exp merge of the splits               attention_merge.cu
//   proj f32 = attn Wo^T;  h = rmsnorm(x += proj)                   cuBLASLt, residual_rmsnorm.cu
//   gate_up f32 = h [Wgate;Wup]^T; hidden T = silu(gate) * up       cuBLASLt, swiglu.cu
//   ffn_out f32 = hidden Wdown^T                                    cuBLASLt
// then h = final_norm(x += ffn_out) of the wanted rows only, logits = h C^T.
//
// A step whose shape (rows, wanted rows, prefill chunks, cache) was seen
// before is replayed as one CUDA graph: the copy of the step's metadata (and
// of the sampling parameters) from fixed pinned staging buffers, which the
// host refills before each launch, the forward pass, the sampling kernel and
// the copy of the tokens back. Decode-only steps are padded to a few
// captured batch sizes (batch_plan.h, graph_batch_rows), so a handful of
// graphs serve every batch size.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cuda/cuda_options.h"
#include "engine/executor/executor.h"
#include "engine/model_files/model_source.h"
#include "reference/model_weights.h"

namespace astrai::cuda {

class AllReduce;
class DevicePageCache;
struct BatchPlan;

// One rank's part in a tensor-parallel group (cuda/tensor_parallel/,
// docs/tensor-parallel.md): the executor runs the rank's shard of the model
// (engine/distributed/tensor_parallel_shard.h) as a model of its own, and
// sums the row-parallel products (the attention output and down
// projections) over the ranks with one all-reduce each, inside the step's
// graph. Rank 0 samples; the other ranks compute no logits.
struct RankRole {
  AllReduce* comm = nullptr;  // the ranks' sum (tensor_parallel/communicator.h); null: one GPU
  // Rank 0: called with each step's plan once it is checked and the step's
  // buffers are ready, before any of its work is queued, so that the other
  // ranks run the same plan (run_rank_step) while this one runs it.
  std::function<void(const BatchPlan& plan, bool padded, const DevicePageCache& cache)> plan_ready;
  bool logits = true;  // false on the other ranks: no final norm, classifier or sampling
};

class CudaExecutor final : public Executor {
 public:
  // Uploads the weights tensor by tensor (DeviceWeights); keeps nothing of
  // `source` (the host may drop the file or the weights once this returns).
  CudaExecutor(const ModelSource& source, CudaOptions options, RankRole role = {});
  // The same from weights in memory (tests, synthetic models).
  CudaExecutor(const ModelWeights& weights, CudaOptions options);
  ~CudaExecutor() override;

  const ModelConfig& config() const override;
  // Throws std::invalid_argument unless `cache` is the view of a
  // DevicePageCache of this model and dtype; otherwise as astrai::forward.
  xt::xtensor<float, 2> forward(std::span<const BatchToken> batch, KVCacheView& cache) override;
  // forward(), then each wanted row's token drawn on the device by
  // cuda/kernels/sample.cu (cuda/device_sampler.h): only token ids come
  // back; a row with bad logits, or whose top-k keeps more than
  // kSampleMaxKept candidates, has its logits copied back for the reference
  // sampler. Each result is what sample_rows() gives on forward()'s logits.
  std::vector<SampledToken> forward_and_sample(std::span<const BatchToken> batch, KVCacheView& cache,
                                               std::span<const RowSampling> rows) override;
  std::string name() const override;
  // The weights on the device: their bytes, and which matrices stay quantized (DeviceWeights::describe).
  std::string weights_description() const;
  size_t weights_bytes() const override;  // device memory the weights take

  DType dtype() const;
  const CudaOptions& options() const;
  // Whether every GEMM so far used its shape's one algorithm (see gemm.h).
  bool gemm_batch_invariant() const;
  std::string gemm_invariance_note() const;
  // Steps replayed from a CUDA graph so far (the capturing step included),
  // and graphs captured so far.
  long graph_replays() const;
  long graph_captures() const;
  // Rows of the last step as launched: a decode-only step's rows padded to
  // its captured batch size (graph_batch_rows) when graphs are on.
  int last_step_rows() const;
  // Rows the last forward_and_sample() sampled on the host (see above).
  int last_host_sampled_rows() const;
  // A rank other than 0 (role.logits false): one step of rank 0's plan (the
  // padded plan rank 0's plan_ready gave) on this rank's cache, as rank 0
  // runs it, graph replays included; returns when the step is done.
  void run_rank_step(const BatchPlan& plan, bool padded, DevicePageCache& cache);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace astrai::cuda
