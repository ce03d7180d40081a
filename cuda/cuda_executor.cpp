// CudaExecutor: device buffers, the per-layer launch sequence, CUDA graphs.
#include "cuda/cuda_executor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <compare>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/all_reduce.h"
#include "cuda/batch_plan.h"
#include "cuda/cuda_available.h"
#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/device_page_cache.h"
#include "cuda/device_sampler.h"
#include "cuda/device_weights.h"
#include "cuda/gemm.h"
#include "cuda/kernels/kernels.h"
#include "cuda/moe_ffn.h"
#include "cuda/paged_attention.h"
#include "cuda/pinned_buffer.h"
#include "reference/rope.h"

namespace astrai::cuda {
namespace {

void check_supported(const ModelConfig& c) {
  c.validate();
  if (c.head_dim() > kAttentionMaxHeadDim)
    throw std::invalid_argument("CUDA backend: head_dim " + std::to_string(c.head_dim()) + " is above the " +
                                std::to_string(kAttentionMaxHeadDim) + " the attention kernels support");
  if (c.n_heads / c.n_kv_heads > kAttentionMaxQueries)
    throw std::invalid_argument("CUDA backend: " + std::to_string(c.n_heads / c.n_kv_heads) +
                                " query heads per KV head is above the " + std::to_string(kAttentionMaxQueries) +
                                " the decode attention kernel supports");
}

}  // namespace

struct CudaExecutor::Impl {
  CudaOptions options;
  RankRole role;
  ModelConfig c;
  int split_len = 0, max_splits = 0;
  cudaStream_t stream = nullptr;
  DeviceWeights weights;
  GemmRunner gemm;
  // A cos/sin table pair [max_seq_len, head_dim / 2] per distinct RoPE the
  // layers rotate with (one, or two for Gemma 3's sliding layers), and
  // which pair each layer takes.
  std::vector<DeviceBuffer> rope_cos, rope_sin;
  std::vector<int> layer_rope_table;

  // Buffers grown on demand: activations and metadata for `layout.capacity()`
  // rows, attention partials for `partial_capacity` rows (BatchPlan::
  // partial_rows) and logits for `wanted_capacity` rows (only the rows that
  // want them: a long prefill needs one).
  PlanLayout layout{0, 0};
  int partial_capacity = 0, wanted_capacity = 0;
  DeviceBuffer x, h, qkv, attn, proj, gate_up, hidden, ffn_out, o_partial, lse, logits, meta;
  MoeWorkspace moe;  // sparse layers' scratch (empty for a dense model)
  PinnedBuffer meta_host, logits_host;
  DeviceSampler sampler;  // forward_and_sample's kernel buffers

  // CUDA graphs of steps, by everything their launches depend on: the
  // shape (rows, wanted rows, decode rows, and per prefill chunk its tiles
  // and rows), the cache (its storage addresses and its page count, which
  // sets every layer's offset) and what is sampled in the graph; how often
  // each shape was seen.
  struct GraphKey {
    int rows = 0, wanted = 0, decode = 0;
    std::vector<int> chunks;  // per prefill chunk: tiles, rows
    uintptr_t keys = 0, values = 0;
    int page_size = 0, n_pages = 0;
    uintptr_t sliding_keys = 0, sliding_values = 0;  // the cache's sliding pool (0: none)
    int sliding_pages = 0;
    int sampling = 0;  // kForwardOnly, or kSampled | kWithLogprobs | kWithAdjustments | kWithMasks
    auto operator<=>(const GraphKey&) const = default;
  };
  enum GraphSampling { kForwardOnly = 0, kSampled = 1, kWithLogprobs = 2, kWithAdjustments = 4, kWithMasks = 8 };  // flags
  // Steps of a shape no padding covers (mixed prefill + decode, or above
  // kMaxGraphBatchRows) are captured too, up to this many graphs: prefill
  // lengths vary, and each graph holds device memory for its nodes.
  static constexpr size_t kMaxUnpaddedGraphs = 64;
  std::map<GraphKey, cudaGraphExec_t> graphs;
  std::map<GraphKey, int> seen;
  size_t unpadded_graphs = 0;
  long replays = 0, captures = 0;
  int last_rows = 0;  // rows of the last step, padding included

  Impl(const ModelSource& source, CudaOptions o, RankRole r)
      : options(o), role(std::move(r)), c(checked(source.config)), weights((select_device(o.device), source), o.dtype),
        gemm(o.batch_invariant ? GemmAlgorithms::OnePerShape : GemmAlgorithms::PerRowBucket) {
    split_len = split_len_for(c.max_seq_len);
    max_splits = max_splits_for(c.max_seq_len, split_len);
    ASTRAI_CUDA_CHECK(cudaStreamCreate(&stream));  // blocking: ordered with the view's cudaMemcpy calls
    build_rope_tables();
    // Quantized matrices are decoded slice by slice for steps of many rows (prefill).
    if (const int cols = weights.widest_quantized_cols(); cols > 0) gemm.reserve_dequantize(cols, o.dtype);
  }
  ~Impl() {
    cudaSetDevice(options.device);  // possibly another thread than the one that made it
    clear_graphs();
    if (stream) cudaStreamDestroy(stream);
  }

  static const ModelConfig& checked(const ModelConfig& config) {
    check_supported(config);
    return config;
  }
  static int select_device(int device) {
    std::string why;
    if (!cuda_available(&why)) throw std::runtime_error("CUDA backend: " + why);
    ASTRAI_CUDA_CHECK(cudaSetDevice(device));
    return device;
  }

  // cos/sin of rope_angle() at rope_frequencies() (reference/rope.h, each
  // layer's base and scaling: layer_rope()), times YaRN's attention factor
  // (1 for the other kinds): the reference's own angles and rounding. Layers
  // that rotate alike share one pair of tables.
  void build_rope_tables() {
    const int half = c.head_dim() / 2;
    std::vector<LayerRope> built;
    for (int l = 0; l < c.n_layers; ++l) {
      const LayerRope r = layer_rope(c, l);
      const auto same = std::find(built.begin(), built.end(), r);
      if (same != built.end()) {
        layer_rope_table.push_back(int(same - built.begin()));
        continue;
      }
      layer_rope_table.push_back(int(built.size()));
      built.push_back(r);
      const std::vector<float> freqs = rope_frequencies(c.head_dim(), r.theta, r.scaling);
      const float magnitude = rope_attention_factor(r.scaling);
      std::vector<float> cos_table(size_t(c.max_seq_len) * size_t(half)), sin_table(cos_table.size());
      for (int pos = 0; pos < c.max_seq_len; ++pos)
        for (int i = 0; i < half; ++i) {
          const float angle = rope_angle(pos, freqs[size_t(i)]);
          cos_table[size_t(pos) * size_t(half) + size_t(i)] = std::cos(angle) * magnitude;
          sin_table[size_t(pos) * size_t(half) + size_t(i)] = std::sin(angle) * magnitude;
        }
      rope_cos.emplace_back(cos_table.size() * 4, "a RoPE cos table");
      rope_sin.emplace_back(sin_table.size() * 4, "a RoPE sin table");
      ASTRAI_CUDA_CHECK(cudaMemcpy(rope_cos.back().get(), cos_table.data(), cos_table.size() * 4, cudaMemcpyHostToDevice));
      ASTRAI_CUDA_CHECK(cudaMemcpy(rope_sin.back().get(), sin_table.data(), sin_table.size() * 4, cudaMemcpyHostToDevice));
    }
  }

  void clear_graphs() {
    for (auto& [key, exec] : graphs) cudaGraphExecDestroy(exec);
    graphs.clear();
    seen.clear();
    unpadded_graphs = 0;
  }

  // Grows whatever buffer `plan` does not fit (a grown buffer invalidates the graphs).
  void ensure_capacity(const BatchPlan& plan) {
    const int rows = plan.rows, wanted = int(plan.wanted_rows.size());
    const bool rows_fit = layout.fits(plan);
    if (rows_fit && plan.partial_rows <= partial_capacity && wanted <= wanted_capacity) return;
    ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));
    clear_graphs();  // they point into the buffers about to be replaced
    const size_t es = dtype_size(options.dtype);
    if (!rows_fit) {
      layout = PlanLayout(std::max({rows, 2 * layout.capacity(), 16}),
                          std::max(plan.pages_per_seq, layout.pages_per_seq()),
                          layout.sliding_tables() || plan.has_sliding());
      const size_t C = size_t(layout.capacity());
      const size_t dim = size_t(c.dim), qd = size_t(c.q_dim()), kvd = size_t(c.kv_dim()), hid = size_t(c.hidden_dim);
      const std::string rows_text = " for " + std::to_string(C) + " rows";
      x = DeviceBuffer(C * dim * 4, "the residual stream" + rows_text);
      h = DeviceBuffer(C * dim * es, "normalized activations" + rows_text);
      qkv = DeviceBuffer(C * (qd + 2 * kvd) * 4, "q/k/v" + rows_text);
      attn = DeviceBuffer(C * qd * es, "attention outputs" + rows_text);
      proj = DeviceBuffer(C * dim * 4, "attention projections" + rows_text);
      gate_up = DeviceBuffer(C * 2 * hid * 4, "gate/up activations" + rows_text);
      hidden = DeviceBuffer(C * hid * es, "SwiGLU outputs" + rows_text);
      ffn_out = DeviceBuffer(C * dim * 4, "feed-forward outputs" + rows_text);
      meta = DeviceBuffer(layout.ints() * 4, "batch metadata" + rows_text);
      meta_host = PinnedBuffer(layout.ints() * 4);
      if (c.moe.n_experts > 0) moe = MoeWorkspace(c, int(C), options.dtype);
    }
    if (plan.partial_rows > partial_capacity) {
      partial_capacity = std::max({plan.partial_rows, 2 * partial_capacity, 16});
      const size_t floats = attention_partial_floats(c, partial_capacity, max_splits);
      const std::string text = " for " + std::to_string(partial_capacity) + " rows";
      o_partial = DeviceBuffer(floats * 4, "attention split outputs" + text);
      lse = DeviceBuffer(floats / size_t(c.head_dim()) * 4, "attention split log-sum-exps" + text);
    }
    if (role.logits && wanted > wanted_capacity) {
      wanted_capacity = std::max({wanted, 2 * wanted_capacity, 16});
      const size_t floats = size_t(wanted_capacity) * size_t(c.vocab_size);
      logits = DeviceBuffer(floats * 4, "logits for " + std::to_string(wanted_capacity) + " rows");
      logits_host = PinnedBuffer(floats * 4);
    }
  }

  const int* meta_at(PlanLayout::Section s) const { return layout.at(meta.as<int>(), s); }

  // The metadata a plan of `rows` rows can use: every section, and page
  // tables for as many sequences as rows. A fixed size per row count, so a
  // graph's captured copy moves whatever a later plan of its shape packed.
  size_t meta_ints(int rows) const {
    return size_t(PlanLayout::kTables) * size_t(layout.capacity()) + size_t(rows) * size_t(layout.table_stride());
  }

  // The copy of the packed plan from the pinned staging area to the device:
  // the first work of a step, captured into its graph with the rest.
  void upload_plan(int rows) {
    ASTRAI_CUDA_CHECK(
        cudaMemcpyAsync(meta.get(), meta_host.get(), meta_ints(rows) * 4, cudaMemcpyHostToDevice, stream));
  }

  // Every launch of one forward pass, in order, on `stream`.
  void enqueue(const BatchPlan& plan, const DevicePageCache& kv) {
    const DType t = options.dtype;
    const int R = plan.rows, W = int(plan.wanted_rows.size());
    const int qkv_width = c.q_dim() + 2 * c.kv_dim();
    const WeightPart& embedding = weights.token_embedding().parts.front();
    const float embed_scale = c.options.scaled_embedding ? std::sqrt(float(c.dim)) : 1.0f;  // embed()'s factor
    if (embedding.quant)
      launch_embedding_gather_quant(embedding.data.get(), *embedding.quant, c.dim, meta_at(PlanLayout::kTokens), R,
                                    embed_scale, x.as<float>(), stream);
    else
      launch_embedding_gather(embedding.data.get(), t, c.dim, meta_at(PlanLayout::kTokens), R, embed_scale,
                              x.as<float>(), stream);
    const AttentionArgs full_args = attention_args(c, qkv.as<float>(), qkv_width, KVLayer{}, kv.page_size(), layout,
                                                   meta.as<int>(), split_len, o_partial.as<float>(), lse.as<float>());
    // A sliding layer in the cache's sliding pool reads that pool's page tables and writes its slots.
    const AttentionArgs sliding_args = plan.has_sliding() ? sliding_pool_args(full_args, layout) : full_args;
    // Every norm scales by its weight, or by 1 + weight (Gemma's unit offset).
    const float offset = c.options.norm_unit_offset ? 1.0f : 0.0f;
    const auto scale = [&](const DeviceBuffer& w) { return NormScale{w.get(), offset}; };
    // The decode step's norms inside the mat-vecs (docs/cuda.md, "Norms
    // inside the mat-vec"): at the mat-vec's row counts a product that ends a
    // block adds its output to x itself (its epilogue) where nothing stands
    // between it and the residual add (an all-reduce, a sandwich norm), and
    // the product after a norm normalizes x itself (its prologue) where x is
    // complete: no launch of the norm. The bits are the separate launches'.
    const bool fusing = !role.comm && !c.options.sandwich_norms;
    const auto prologue = [&](const DeviceBuffer& w, void* store) {
      MatvecFusion f;
      f.norm_rows = x.as<float>();
      f.norm = scale(w);
      f.eps = c.norm_eps;
      f.store = store;
      return f;
    };
    const auto epilogue = [](const void* bias) {
      MatvecFusion f;
      f.accumulate = true;
      f.bias = bias;
      return f;
    };
    // The previous feed-forward's output waits in ffn_out until the next
    // norm adds it (post-normed by that layer's post_ffn_norm with sandwich
    // norms); none waits where that product added it itself.
    ResidualDelta pending{};
    for (int l = 0; l < c.n_layers; ++l) {
      const DeviceLayerWeights& L = weights.layer(l);
      if (fusing && !pending.rows && gemm.fuses(L.wqkv, R)) {
        gemm.run(nullptr, L.wqkv, t, R, qkv.as<float>(), stream, prologue(L.attn_norm, nullptr));
      } else {
        launch_residual_rmsnorm(x.as<float>(), pending, scale(L.attn_norm), t, c.dim, c.norm_eps, nullptr, R, h.get(),
                                stream);
        gemm.run(h.get(), L.wqkv, t, R, qkv.as<float>(), stream);
      }
      const bool own_pool = kv.layer_pool(l) == PagePool::Sliding;
      AttentionArgs a = own_pool ? sliding_args : full_args;
      a.kv = KVLayer{kv.layer_keys(l), kv.layer_values(l), t};
      a.window = c.window(l);  // a sliding layer's splits cover its window only
      a.sinks = L.sinks.get();  // gpt-oss's sink logits, completed in the merge (null: none)
      // Biases and q/k norms, null where the model has none.
      const PreRope pre{L.bqkv.get(), L.q_norm.get(), L.k_norm.get(), c.norm_eps, offset};
      const size_t rope = size_t(layer_rope_table[size_t(l)]);  // this layer's cos/sin pair
      launch_rope_kv_write(qkv.as<float>(), R, c.n_heads, c.n_kv_heads, c.head_dim(), c.rope_layout,
                           meta_at(PlanLayout::kPos), rope_cos[rope].as<float>(), rope_sin[rope].as<float>(),
                           meta_at(own_pool ? PlanLayout::kSlidingSlot : PlanLayout::kSlot), a.kv, pre, stream);
      launch_paged_attention(a, plan, layout, meta.as<int>(), attn.get(), t, stream);
      // x += attention output (+ gpt-oss's bias after the all-reduce: once; Gemma: post-normed)
      ResidualDelta attention_out{};
      if (fusing && gemm.fuses(L.wo, R)) {
        gemm.run(attn.get(), L.wo, t, R, x.as<float>(), stream, epilogue(L.bo.get()));
      } else {
        gemm.run(attn.get(), L.wo, t, R, proj.as<float>(), stream);
        if (role.comm) role.comm->all_reduce_sum(proj.as<float>(), size_t(R) * size_t(c.dim), stream);  // row-parallel
        attention_out = {proj.as<float>(), L.bo.get(), scale(L.post_attn_norm)};
      }
      bool ffn_adds = false;  // whether the feed-forward's last launch adds its output to x
      if (c.moe.sparse(l)) {
        MatvecFusion moe_fusion;
        if (fusing && !attention_out.rows && gemm.fuses(L.router, R))
          moe_fusion = prologue(L.ffn_norm, h.get());  // the router's launch stores h for the experts
        else
          launch_residual_rmsnorm(x.as<float>(), attention_out, scale(L.ffn_norm), t, c.dim, c.norm_eps, nullptr, R,
                                  h.get(), stream);
        moe_fusion.accumulate = ffn_adds = fusing;
        enqueue_moe_ffn(gemm, L, c, t, h.get(), R, moe, ffn_adds ? x.as<float>() : ffn_out.as<float>(), stream,
                        &moe_fusion);
      } else {
        if (fusing && !attention_out.rows && gemm.fuses(L.w_gate_up, R)) {
          gemm.run(nullptr, L.w_gate_up, t, R, gate_up.as<float>(), stream, prologue(L.ffn_norm, nullptr));
        } else {
          launch_residual_rmsnorm(x.as<float>(), attention_out, scale(L.ffn_norm), t, c.dim, c.norm_eps, nullptr, R,
                                  h.get(), stream);
          gemm.run(h.get(), L.w_gate_up, t, R, gate_up.as<float>(), stream);
        }
        launch_swiglu(gate_up.as<float>(), R, c.hidden_dim, hidden.get(), t, stream,
                      c.options.gelu_tanh ? GateActivation::GeluTanh : GateActivation::Silu);
        ffn_adds = fusing && gemm.fuses(L.w_down, R);
        if (ffn_adds) gemm.run(hidden.get(), L.w_down, t, R, x.as<float>(), stream, epilogue(nullptr));
        else gemm.run(hidden.get(), L.w_down, t, R, ffn_out.as<float>(), stream);
      }
      if (ffn_adds) {
        pending = {};
      } else {
        if (role.comm) role.comm->all_reduce_sum(ffn_out.as<float>(), size_t(R) * size_t(c.dim), stream);  // row-parallel
        pending = {ffn_out.as<float>(), nullptr, scale(L.post_ffn_norm)};
      }
    }
    if (!role.logits) return;
    // The final norm and the classifier for the wanted rows only, gathered to rows 0..W-1.
    launch_residual_rmsnorm(x.as<float>(), pending, scale(weights.final_norm()), t, c.dim, c.norm_eps,
                            meta_at(PlanLayout::kWanted), W, h.get(), stream);
    gemm.run(h.get(), weights.classifier(), t, W, logits.as<float>(), stream);
    if (c.final_logit_softcap > 0.0f)
      launch_logit_softcap(logits.as<float>(), size_t(W) * size_t(c.vocab_size), c.final_logit_softcap, stream);
  }

  // NaN bytes over every scratch buffer, queued on the stream before the step.
  void poison_scratch() {
    for (DeviceBuffer* b : {&x, &h, &qkv, &attn, &proj, &gate_up, &hidden, &ffn_out, &o_partial, &lse, &logits})
      if (b->get() != nullptr) ASTRAI_CUDA_CHECK(cudaMemsetAsync(b->get(), 0xff, b->bytes(), stream));
    moe.poison(stream);
  }

  GraphKey graph_key(const BatchPlan& plan, const DevicePageCache& kv, int sampling) const {
    GraphKey key{plan.rows, int(plan.wanted_rows.size()), int(plan.decode_rows.size()), {},
                 reinterpret_cast<uintptr_t>(kv.pool_keys(PagePool::Full)),
                 reinterpret_cast<uintptr_t>(kv.pool_values(PagePool::Full)), kv.page_size(), kv.n_pages(),
                 reinterpret_cast<uintptr_t>(kv.pool_keys(PagePool::Sliding)),
                 reinterpret_cast<uintptr_t>(kv.pool_values(PagePool::Sliding)),
                 kv.sliding_pages() ? kv.sliding_pages()->n_pages() : 0, sampling};
    for (int c = 0; c < plan.n_chunks(); ++c) {
      key.chunks.push_back(plan.chunk_tiles[size_t(c) + 1] - plan.chunk_tiles[size_t(c)]);
      key.chunks.push_back(plan.chunk_row_begin(c + 1) - plan.chunk_row_begin(c));
    }
    return key;
  }

  // A step of a shape seen before runs from a graph captured the second time
  // (the first runs eagerly and settles the GEMM algorithms outside any
  // capture); `body` queues the step's work, metadata upload first.
  template <typename Body>
  void run_graph_step(const GraphKey& key, bool padded, Body&& body) {
    if (auto it = graphs.find(key); it != graphs.end()) {
      ASTRAI_CUDA_CHECK(cudaGraphLaunch(it->second, stream));
      ++replays;
      return;
    }
    if (seen.size() > 4096) seen.clear();  // shapes seen once, forgotten now and then
    if (++seen[key] < 2 || (!padded && unpadded_graphs >= kMaxUnpaddedGraphs)) {
      body();
      return;
    }
    ASTRAI_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      body();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(stream, &broken);
      if (broken) cudaGraphDestroy(broken);
      throw;
    }
    cudaGraph_t graph = nullptr;
    ASTRAI_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    ASTRAI_CUDA_CHECK(status);
    graphs.emplace(key, exec);
    ++captures;
    if (!padded) ++unpadded_graphs;
    ASTRAI_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    ++replays;
  }

  // Checks the batch and the cache, then queues the step on `stream`: the
  // metadata upload, the forward pass, and with `sample` the sampling of
  // the wanted rows (DeviceSampler), in one graph launch where the shape
  // repeats. Afterwards rows 0 .. W-1 of `logits` (device) will hold the W
  // wanted rows' logits. Returns W. The caller must synchronise the stream
  // before the next step (even for W = 0): the next step refills the pinned
  // staging buffers this step's queued copies read.
  //
  // With graphs on, a decode-only step is padded to the next captured batch
  // size (pad_decode_plan), so a handful of graphs serve every batch size;
  // mixed prefill + decode steps are captured at their own shape.
  size_t enqueue_step(std::span<const BatchToken> batch, KVCacheView& view, bool sample,
                      std::span<const RowSampling> rows) {
    const DevicePageCache& kv = checked_cache(view);
    BatchPlan plan = plan_batch(batch, kv.pages(), c, kPrefillTileRows, kPrefillChunkRows, kv.sliding_pages());
    if (plan.rows == 0) return 0;
    const size_t wanted = plan.wanted_rows.size();
    const bool padded = options.cuda_graphs && plan.decode_only() && plan.rows <= kMaxGraphBatchRows;
    if (padded)
      plan = pad_decode_plan(plan, graph_batch_rows(plan.rows), graph_batch_rows(int(wanted)), kv.first_padding_slot(),
                             DevicePageCache::kPaddingSlots,
                             plan.has_sliding() ? kv.first_padding_slot(PagePool::Sliding) : 0);
    last_rows = plan.rows;
    // The device is per host thread, and the scheduler calls forward() on its own.
    ASTRAI_CUDA_CHECK(cudaSetDevice(options.device));
    ensure_capacity(plan);
    const bool sampling = sample && wanted > 0;
    const int padded_wanted = int(plan.wanted_rows.size());
    const long sampler_generation = sampler.generation();
    const bool sample_in_graph = sampling && sampler.stage(c.vocab_size, rows, padded_wanted, stream);
    if (sampler.generation() != sampler_generation) clear_graphs();  // they copy to and from the old buffers
    if (options.poison_scratch) poison_scratch();
    layout.pack(plan, meta_host.as<int>());
    if (role.plan_ready) role.plan_ready(plan, padded, kv);
    const auto body = [&] {
      upload_plan(plan.rows);
      enqueue(plan, kv);
      if (sample_in_graph) sampler.enqueue(logits.as<float>(), c.vocab_size, stream);
    };
    if (options.cuda_graphs) {
      const int kind = !sample_in_graph ? kForwardOnly
                                        : kSampled + (sampler.staged_logprobs() ? kWithLogprobs : 0) +
                                              (sampler.staged_adjustments() ? kWithAdjustments : 0) +
                                              (sampler.staged_masks() ? kWithMasks : 0);
      run_graph_step(graph_key(plan, kv, kind), padded, body);
    } else {
      body();
    }
    if (sampling && !sample_in_graph) sampler.enqueue(logits.as<float>(), c.vocab_size, stream);
    return wanted;
  }

  // A rank other than 0: rank 0's padded plan, on this rank's cache.
  void run_rank_step(const BatchPlan& plan, bool padded, const DevicePageCache& kv) {
    if (role.logits) throw std::logic_error("CudaExecutor::run_rank_step is for the ranks that compute no logits");
    if (plan.rows == 0) return;
    ASTRAI_CUDA_CHECK(cudaSetDevice(options.device));
    last_rows = plan.rows;
    ensure_capacity(plan);
    if (options.poison_scratch) poison_scratch();
    layout.pack(plan, meta_host.as<int>());
    const auto body = [&] {
      upload_plan(plan.rows);
      enqueue(plan, kv);
    };
    if (options.cuda_graphs)
      run_graph_step(graph_key(plan, kv, kForwardOnly), padded, body);
    else
      body();
    ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  const DevicePageCache& checked_cache(KVCacheView& view) const {
    auto* device_view = dynamic_cast<DevicePageCacheView*>(&view);
    if (!device_view)
      throw std::invalid_argument(
          "CudaExecutor::forward needs the KV cache made by make_cuda_kv_cache (a DevicePageCache on the GPU), "
          "not a host KV cache");
    const DevicePageCache& kv = device_view->cache();
    if (kv.dtype() != options.dtype)
      throw std::invalid_argument(std::string("CudaExecutor::forward: the KV cache holds ") + dtype_name(kv.dtype()) +
                                  " but the executor computes in " + dtype_name(options.dtype));
    const ModelConfig& kc = kv.config();
    if (kc.n_layers != c.n_layers || kc.kv_dim() != c.kv_dim() || kc.max_seq_len != c.max_seq_len)
      throw std::invalid_argument("CudaExecutor::forward: the KV cache was made for another model (" + kc.describe() +
                                  ", executor " + c.describe() + ")");
    return kv;
  }

  xt::xtensor<float, 2> forward(std::span<const BatchToken> batch, KVCacheView& view) {
    const size_t wanted = enqueue_step(batch, view, false, {}), vocab = size_t(c.vocab_size);
    if (wanted > 0)
      ASTRAI_CUDA_CHECK(cudaMemcpyAsync(logits_host.as<float>(), logits.get(), wanted * vocab * 4,
                                        cudaMemcpyDeviceToHost, stream));
    ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));
    xt::xtensor<float, 2> out({wanted, vocab});
    std::copy_n(logits_host.as<float>(), wanted * vocab, out.data());
    return out;
  }

  // The forward pass and the sampling kernel on the wanted rows' logits
  // where they are, one graph launch where the shape repeats; only token ids
  // come back, except for the rows DeviceSampler leaves to the host.
  std::vector<SampledToken> forward_and_sample(std::span<const BatchToken> batch, KVCacheView& view,
                                               std::span<const RowSampling> rows) {
    const size_t want =
        size_t(std::count_if(batch.begin(), batch.end(), [](const BatchToken& b) { return b.want_logits; }));
    if (rows.size() != want)  // sample_rows' error, before the step runs
      throw std::invalid_argument("sampling: " + std::to_string(rows.size()) +
                                  " rows of sampling parameters for " + std::to_string(want) + " rows of logits");
    const size_t wanted = enqueue_step(batch, view, true, rows);
    ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (wanted == 0) return {};
    return sampler.finish(logits.as<float>(), c.vocab_size, rows);
  }
};

CudaExecutor::CudaExecutor(const ModelSource& source, CudaOptions options, RankRole role)
    : impl_(std::make_unique<Impl>(source, options, std::move(role))) {}

CudaExecutor::CudaExecutor(const ModelWeights& weights, CudaOptions options)
    : CudaExecutor((weights.validate_shapes(), model_source(weights)), options) {}
CudaExecutor::~CudaExecutor() = default;

const ModelConfig& CudaExecutor::config() const { return impl_->c; }
xt::xtensor<float, 2> CudaExecutor::forward(std::span<const BatchToken> batch, KVCacheView& cache) {
  return impl_->forward(batch, cache);
}
std::vector<SampledToken> CudaExecutor::forward_and_sample(std::span<const BatchToken> batch, KVCacheView& cache,
                                                           std::span<const RowSampling> rows) {
  return impl_->forward_and_sample(batch, cache, rows);
}
int CudaExecutor::last_host_sampled_rows() const { return impl_->sampler.last_host_rows(); }
void CudaExecutor::run_rank_step(const BatchPlan& plan, bool padded, DevicePageCache& cache) {
  impl_->run_rank_step(plan, padded, cache);
}
std::string CudaExecutor::name() const { return std::string("cuda-") + dtype_name(impl_->options.dtype); }
std::string CudaExecutor::weights_description() const { return impl_->weights.describe(); }
size_t CudaExecutor::weights_bytes() const { return impl_->weights.bytes(); }
DType CudaExecutor::dtype() const { return impl_->options.dtype; }
const CudaOptions& CudaExecutor::options() const { return impl_->options; }
bool CudaExecutor::gemm_batch_invariant() const { return impl_->gemm.batch_invariant(); }
std::string CudaExecutor::gemm_invariance_note() const { return impl_->gemm.invariance_note(); }
long CudaExecutor::graph_replays() const { return impl_->replays; }
long CudaExecutor::graph_captures() const { return impl_->captures; }
int CudaExecutor::last_step_rows() const { return impl_->last_rows; }

}  // namespace astrai::cuda
