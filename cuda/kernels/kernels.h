// Host-side launchers of the CUDA backend's kernels, one .cu file each. Every
// launcher dispatches on the runtime DType (float or bfloat16 storage), checks
// the launch, and names in its file the reference function it implements.
// Plain C++ (no CUDA syntax), so the executor and the tests are compiled by g++.
//
// Conventions: activations that come out of GEMMs (the residual stream x,
// q/k/v, projections) are float32; what goes into GEMMs, the weights and the
// KV cache are `dtype` (void* below). Rows are contiguous; `stride` is the
// distance between rows in elements.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>

#include "cuda/dtype.h"
#include "cuda/quant_format.h"
#include "reference/model_config.h"

namespace astrai::cuda {

// out[i] = dtype(in[i]) for i < n: the weight upload's conversion.
void launch_convert_from_float(const float* in, size_t n, void* out, DType dtype, cudaStream_t stream);

// x[r, :] = scale * float(table[tokens[r], :]) for r < rows: scale 1, or
// sqrt(dim) for Gemma's scaled embedding.             (reference: embed() in forward.cpp)
void launch_embedding_gather(const void* table, DType dtype, int dim, const int* tokens, int rows, float scale,
                             float* x, cudaStream_t stream);
// The same from a table kept in a quantized format: x[r, :] = scale * the
// decoded row tokens[r] (dim a whole number of blocks), the host decoder's
// float32 values times scale.          (reference: quant::dequantize(), then embed())
void launch_embedding_gather_quant(const void* table, QuantFormat format, int dim, const int* tokens, int rows,
                                   float scale, float* x, cudaStream_t stream);

// An RMSNorm's scale, element j: weight[j] (storage type), or 1 + weight[j]
// computed in float with Gemma's unit offset (norm_unit_offset).
struct NormScale {
  const void* weight = nullptr;
  float offset = 0.0f;  // 0, or 1 for (1 + w)
};

// What a block adds to the residual stream: its output rows (float), plus a
// bias (gpt-oss's o_proj bias; null: none), RMSNormed by `norm` when its
// weight is set (Gemma 3's post-attention and post-feed-forward norms):
//   x += norm(rows + bias)          (reference: the `x += ...` of attention_block(), feed_forward_block())
struct ResidualDelta {
  const float* rows = nullptr;  // null: nothing is added
  const void* bias = nullptr;   // [dim], storage type
  NormScale norm;
};

// For each output row i < out_rows, with r = row_map ? row_map[i] : i:
//   x[r, :] += delta (as ResidualDelta says; nothing without delta.rows)
//   out[i, :] = dtype(scale * (x[r, :] / sqrt(mean(x[r, :]^2) + eps)))   (reference: rmsnorm())
// with scale the NormScale `norm`.
void launch_residual_rmsnorm(float* x, const ResidualDelta& delta, NormScale norm, DType dtype, int dim, float eps,
                             const int* row_map, int out_rows, void* out, cudaStream_t stream);

// Where K and V of one layer live: row `slot` (= page * page_size + offset)
// of each holds kv_dim = n_kv_heads * head_dim elements of `dtype`.
struct KVLayer {
  void* keys = nullptr;
  void* values = nullptr;
  DType dtype = DType::Float32;
};

// What today's architectures do to the q/k/v projection before RoPE, all
// optional (null: off), each of kv.dtype (the executor's storage type):
struct PreRope {
  const void* bias = nullptr;    // [q_dim + 2 kv_dim]: bq, bk, bv (Qwen 2), added to the GEMM's output
  const void* q_norm = nullptr;  // [head_dim]: RMSNorm weight of every q head (Qwen 3); with k_norm
  const void* k_norm = nullptr;  // [head_dim]: the same for the k heads
  float eps = 0.0f;              // the norms' epsilon (the model's norm_eps)
  float norm_offset = 0.0f;      // 1: the norms scale by 1 + weight (Gemma 3's norm_unit_offset)
};

// qkv: [rows, q_dim + 2 kv_dim] float, q then k then v. Adds the bias,
// RMSNorms each q and k head (pre), rotates q in place and k by the angle
// table (cos/sin [max_seq_len, head_dim/2], built on the host from
// rope_frequencies() exactly as reference/rope.cpp computes angles), then
// writes rotated K and V into row row_slot[r] of the layer's cache. With a
// bias, q in qkv is rotated from its biased value; the unrotated k and v in
// qkv are left as the GEMM wrote them (only the cache holds their result).
// (reference: attention_block() in forward.cpp up to write_kv())
void launch_rope_kv_write(float* qkv, int rows, int n_heads, int n_kv_heads, int head_dim, RopeLayout layout,
                          const int* row_pos, const float* rope_cos, const float* rope_sin, const int* row_slot,
                          KVLayer kv, const PreRope& pre, cudaStream_t stream);

// What both attention kernels read: queries, the paged cache and the split.
struct AttentionArgs {
  const float* q = nullptr;  // row r, head h at q[r * q_stride + h * head_dim] (rotated)
  int q_stride = 0;
  KVLayer kv;
  int page_size = 0;
  const int* page_tables = nullptr;  // sequence s's table at page_tables + s * pages_per_seq
  int pages_per_seq = 0;             // the stride between tables (PlanLayout::table_stride())
  const int* row_seq = nullptr;      // page-table row of each batch row
  const int* row_pos = nullptr;      // position of each batch row; it attends to positions 0..pos
  const int* row_partial = nullptr;  // each batch row's index in o_partial / lse_partial (BatchPlan::row_partial)
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
  int min_split_len = 0;             // the fewest positions of a split, a multiple of kAttentionTile
  int max_splits = 0;                // the most splits of one row (split_len_of() below)
  float scale = 0.0f;                // 1 / sqrt(head_dim)
  int window = 0;                    // the layer's sliding window (ModelConfig::window): 0 attends to 0..pos
  const void* sinks = nullptr;       // [n_heads], storage type (the merge's output's): each head's sink logit
                                     // (gpt-oss), or null
  float* o_partial = nullptr;        // [partial rows, n_heads, max_splits, head_dim]: softmax-weighted V of a split
  float* lse_partial = nullptr;      // [partial rows, n_heads, max_splits]: log-sum-exp of the split's scores
};

inline constexpr int kAttentionTile = 32;      // key positions per shared-memory tile
inline constexpr int kAttentionMaxQueries = 16; // query vectors one block handles
inline constexpr int kPrefillTileRows = 16;    // rows of one sequence per prefill block
inline constexpr int kAttentionMaxHeadDim = 256;

// How many splits a row at position `pos` (it attends to positions 0..pos)
// is cut into, and how long they are. kSplitsFloor splits (16 splits x 8 KV
// heads = 128 blocks, about one per SM of an H100/H200) up to 8k positions,
// then one more split per kSplitPositions positions, so long contexts fill
// several blocks an SM while a split stays long enough that its partials
// (which the merge reads back) cost little; never more than max_splits.
// Each split is a whole number of tiles and at least min_split_len
// positions, so pos / split_len + 1 <= max_splits. The rule reads the row's
// own position only, never the batch, so a row's splits (and its result's
// bits) are the same in any batch.
inline constexpr int kSplitsFloor = 16;
inline constexpr int kSplitPositions = 512;
__host__ __device__ inline int splits_wanted(int pos, int max_splits) {
  const int want = (pos + 1) / kSplitPositions;
  const int at_least = want > kSplitsFloor ? want : kSplitsFloor;
  return at_least < max_splits ? at_least : max_splits;
}
__host__ __device__ inline int split_len_of(int pos, int min_split_len, int max_splits) {
  const int per = kAttentionTile * splits_wanted(pos, max_splits);
  const int len = (pos + per) / per * kAttentionTile;  // ceil((pos + 1) / splits), rounded up to a tile
  return len > min_split_len ? len : min_split_len;
}

// The positions a row at `pos` attends to, first .. pos, cut into splits.
// On a sliding layer (window > 0) first = pos - window + 1 (at least 0): the
// splits cover the window only, so positions before it cost no block and
// (but for the rest of first's tile) no byte, however long the context.
// Splits start on tile boundaries, from base = first rounded down to a
// tile: split s walks [base + s len, min(base + (s + 1) len, pos + 1)) and
// its query's range starts at first in split 0, with len = split_len_of()
// of the walked length. attend_split() needs a walk that begins on a tile
// (its tiles are the walk's), and every kernel then groups a row's
// positions into the same absolute tiles, whichever other rows share its
// block: a row's bits do not depend on its batch. Without a window first =
// base = 0 and these are the splits above. Every kernel of a row (decode,
// prefill, merge) takes its splits from here.
struct RowSplits {
  int first, base, len, count;
  __host__ __device__ int walk_begin(int s) const { return base + s * len; }
  __host__ __device__ int begin(int s) const { return walk_begin(s) > first ? walk_begin(s) : first; }
  __host__ __device__ int end(int s, int pos) const { return walk_begin(s) + len < pos + 1 ? walk_begin(s) + len : pos + 1; }
};
__host__ __device__ inline RowSplits row_splits(int pos, int window, int min_split_len, int max_splits) {
  RowSplits r;
  r.first = window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
  r.base = r.first / kAttentionTile * kAttentionTile;
  r.len = split_len_of(pos - r.base, min_split_len, max_splits);
  r.count = (pos - r.base) / r.len + 1;
  return r;
}

// Decode: one block per (decode row, KV head, split) handles the row's
// n_heads / n_kv_heads query heads sharing that KV head (GQA ratio <= 16).
// (reference: causal_attention() in attention.cpp)
void launch_decode_attention(const AttentionArgs& args, const int* decode_rows, int n_decode_rows,
                             cudaStream_t stream);

// Prefill: one block per (tile of up to kPrefillTileRows rows of one
// sequence, query head, split); tile t covers batch rows
// tile_rows[tile_first[t] .. tile_first[t] + tile_count[t]).
// (reference: causal_attention() in attention.cpp)
void launch_prefill_attention(const AttentionArgs& args, const int* tile_first, const int* tile_count,
                              const int* tile_rows, int n_tiles, cudaStream_t stream);

// out[r, h*head_dim + d] = dtype(sum_s w_s o_s[d] / sum_s w_s), w_s = exp(lse_s - max lse),
// over the splits 0 .. row_pos[r] / split_len of every row r in rows[0 .. n_rows).
void launch_attention_merge(const AttentionArgs& args, const int* rows, int n_rows, void* out, DType out_dtype,
                            cudaStream_t stream);

// ---- the skinny GEMM of decode steps (matvec.cu) ----

// The most rows launch_matvec takes: GemmRunner sends GEMMs of up to this
// many rows to it (cuda/gemm.h).
inline constexpr int kMatvecMaxRows = 8;

// y[r, j] = sum_k x[r, k] w[j, k] for r < rows (0 .. kMatvecMaxRows), j < out,
// k < in: x [rows, in] and w [out, in] of `dtype`, row-major and dense; float32
// accumulation (fmaf), y [rows, ldy] float32 (columns 0 .. out written). W is
// read once for all rows with 16-byte loads when `in` and the pointers allow.
// A row's bits do not depend on `rows`.            (reference: linear() in linear.cpp)
//
// `fusion` folds the decode step's residual norm into the products around it
// (docs/cuda.md, "Norms inside the mat-vec"); each part is optional:
struct MatvecFusion {
  // The prologue: the input is launch_residual_rmsnorm's output for rows
  // norm_rows (float32 [rows, in], nothing added) scaled by `norm`, bit for
  // bit, computed by every block; `x` is not read. With `store`, the
  // normalized rows are also written there ([rows, in] of `dtype`, a slice
  // by each block) for the launches after.
  const float* norm_rows = nullptr;
  NormScale norm;
  float eps = 0.0f;
  void* store = nullptr;
  // The epilogue: y[r, j] = y[r, j] + (sum + bias[j]) (bias [out] of
  // `dtype`, optional): the residual add of launch_residual_rmsnorm, bit for bit.
  bool accumulate = false;
  const void* bias = nullptr;
};
void launch_matvec(const void* x, const void* w, DType dtype, int rows, int in, int out, float* y, int ldy,
                   cudaStream_t stream, const MatvecFusion& fusion = {});

// ---- the decode step's mat-vec on quantized weights (matvec_quant.cu) ----

// y[r, j] = sum_k x[r, k] W[j, k] for r < rows (0 .. kMatvecMaxRows): x [rows,
// in] of `dtype`, W [out, in] as `format` blocks (each row in / block_elements
// whole blocks, rows back to back), decoded in registers to the values the
// host decoders give; float32 accumulation, y [rows, ldy] float32 (columns 0
// .. out written: a part of a stacked projection writes its slice). A row's
// bits do not depend on `rows`.        (reference: linear() on the decoded W)
void launch_matvec_quant(const void* x, DType dtype, const void* w, QuantFormat format, int rows, int in, int out,
                         float* y, int ldy, cudaStream_t stream);

// out[j, k] = dtype(W[j, k]) for W [rows, cols] as `format` blocks: the host
// decoders' values, rounded once to the storage type (prefill multiplies
// the result with cuBLASLt).            (reference: quant::dequantize())
void launch_dequantize(const void* w, QuantFormat format, int rows, int cols, void* out, DType dtype,
                       cudaStream_t stream);

// ---- Mixture-of-Experts (moe_route.cu, moe_matvec.cu, moe_combine.cu; the
// launch sequence is cuda/moe_ffn.cpp's) ----

// For each row r < rows of router scores [rows, n_experts] (float32): the k
// best experts, best first, ties to the lower index and a NaN score below
// every number, into expert[r * k + j], and their weights by `routing`
// (softmax over all scores, the chosen ones' probabilities, renormalised
// when norm_topk; or softmax over the chosen scores) into weight[r * k + j].
// One thread per row, in the reference's order of operations. With a
// router bias ([n_experts] in bias_dtype: gpt-oss) each score is read as
// scores[r, e] + bias[e], the one float addition launch_add_bias would have
// stored (the scores themselves are left as they are).
//                                          (reference: route() in reference/moe.cpp)
void launch_moe_route(const float* scores, int rows, int n_experts, int k, ExpertRouting routing, bool norm_topk,
                      int* expert, float* weight, cudaStream_t stream, const void* bias = nullptr,
                      DType bias_dtype = DType::Float32);

// Rows of one expert one block of launch_moe_matvec multiplies (its tile).
inline constexpr int kMoeTileRows = 8;

// The expert-sorted order of a step's A = rows * k choices, for the grouped
// mat-vec: the choices of expert 0 first (in choice order), then expert 1's...
//   slot_of[a]     the slot (sorted position) of choice a = r * k + j
//   slot_row[s]    the batch row r of slot s
//   tile_expert/tile_first/tile_rows[t]: tile t is slots tile_first ..
//                  tile_first + tile_rows (at most kMoeTileRows) of one expert
//   tiles[0]       how many tiles there are (at most moe_max_tiles(A, n_experts))
struct MoePlan {
  int* slot_of = nullptr;
  int* slot_row = nullptr;
  int* tile_expert = nullptr;
  int* tile_first = nullptr;
  int* tile_rows = nullptr;
  int* tiles = nullptr;
};
// Each expert with n choices has ceil(n / kMoeTileRows) tiles: at most
// A / kMoeTileRows whole tiles plus one partial tile per expert, and never
// more tiles than choices.
inline int moe_max_tiles(int assignments, int n_experts) {
  const int bound = assignments / kMoeTileRows + (n_experts < assignments ? n_experts : assignments);
  return bound < assignments ? bound : assignments;
}
// The plan of expert[0 .. rows * k) (each in [0, n_experts)). One block;
// the order is a function of the choices alone (no atomics).
void launch_moe_plan(const int* expert, int rows, int k, int n_experts, const MoePlan& plan, cudaStream_t stream);

// launch_moe_route, then launch_moe_plan, in one launch of one block where
// rows <= 256 (a decode step: one launch where two), else as those two.
// The same bits either way.
void launch_moe_route_plan(const float* scores, int rows, int n_experts, int k, ExpertRouting routing,
                           bool norm_topk, int* expert, float* weight, const MoePlan& plan, cudaStream_t stream,
                           const void* bias = nullptr, DType bias_dtype = DType::Float32);

// The grouped mat-vec: for every slot s of every tile t < tiles[0], with e =
// tile_expert[t]:  y[s * ldy + j] = sum_i x[xr, i] w[e, j, i]  for j < out,
// where xr = x_rows ? x_rows[s] : s; x of `dtype`; w [n_experts, out, in] in
// `dtype`, or with `format` in its blocks (each expert's out rows of in /
// block_elements whole blocks, the experts back to back, as a GGUF stack);
// float32 y. Blocks for tiles past tiles[0] (max_tiles is the launch's
// bound) return at once. A slot's result is launch_matvec's (or
// launch_matvec_quant's) for its row and its expert's matrix, bit for bit:
// the same lanes, the same fmaf chain and the same tree, whatever shares
// its tile.                         (reference: linear_slice() in reference/linear.cpp)
void launch_moe_matvec(const void* x, const int* x_rows, DType dtype, const void* w, std::optional<QuantFormat> format,
                       int in, int out, const MoePlan& plan, int max_tiles, float* y, int ldy, cudaStream_t stream);

// The experts' gate and up matrices for launch_moe_gate_up_swiglu: expert
// e's gate row j is row e * expert_rows + j of `gate`, its up row j the same
// row of `up` (in one format: the storage type, or `format`'s blocks, rows of
// in / block_elements whole blocks). A stack of [gate; up] per expert is
// gate = the stack, up = its row `hidden`, expert_rows = 2 * hidden; two
// stacks of [experts, hidden, in] are expert_rows = hidden.
struct MoeGateUp {
  const void* gate = nullptr;
  const void* up = nullptr;
  int expert_rows = 0;
  std::optional<QuantFormat> format;
  // gpt-oss: each expert's gate and up biases ([experts, hidden] in dtype,
  // or null), and the clamped SwiGLU's limit (> 0; 0: plain SiLU).
  const void* gate_bias = nullptr;
  const void* up_bias = nullptr;
  float limit = 0.0f;
};

// The grouped gate/up product and its SwiGLU in one launch: for every slot s
// of every tile t < tiles[0] (expert e), out[s * hidden + j] =
// dtype(silu(g) * u) for j < hidden, with g and u the slot's products with
// e's gate and up rows j (gpt-oss: plus e's biases, and the clamped SwiGLU).
// The bits are launch_moe_matvec's (into a float gate/up row), then
// launch_add_bias's, then launch_swiglu's: the same chains, trees, additions
// and activation.   (reference: linear_slice(), expert_linear(), swiglu_ffn(), clamped_swiglu())
void launch_moe_gate_up_swiglu(const void* x, const int* x_rows, DType dtype, const MoeGateUp& w, int in, int hidden,
                               const MoePlan& plan, int max_tiles, void* out, cudaStream_t stream);

// out[r, d] = sum_j weight[r * k + j] * expert_out[slot_of[r * k + j], d] (j in
// order, each product rounded, as the reference adds them), then, with a
// shared expert, + sigmoid(shared_gate[r]) * shared_out[r, d] (both null
// without one).                             (reference: moe_ffn() in reference/moe.cpp)
// With `accumulate`, out[r, d] += that sum instead (the residual add of
// launch_residual_rmsnorm, bit for bit: the decode step's fused norms).
void launch_moe_combine(const float* expert_out, const int* slot_of, const float* weight, int rows, int k, int dim,
                        const float* shared_out, const float* shared_gate, float* out, cudaStream_t stream,
                        bool accumulate = false);

// The down product and the sum above in one launch, for a step of few rows
// (a decode step at batch 1 reads each chosen expert once either way, and
// one launch less is worth more there than the grouping): block (b, r)
// computes outputs kOutputs * b .. of row r, each of the row's k choices
// by launch_moe_matvec's lanes, chain and tree on the choice's SwiGLU row
// hidden[slot_of[r * k + j]] (plus, with `bias` [experts, dim] in dtype,
// launch_add_bias's addition of its expert's row), then the products summed
// as launch_moe_combine sums them. So the bits are those of
// launch_moe_matvec + launch_add_bias + launch_moe_combine, and which path
// a step takes (kMoeDownCombineRows) changes no row's result.
// `w` is the down stack in one part: expert e's row d is row e * dim + d.
inline constexpr int kMoeDownCombineRows = 4;  // the executor takes this path up to this many rows
inline constexpr int kMoeDownCombineMaxK = 16; // choices a row may have on this path
void launch_moe_down_combine(const void* hidden, DType dtype, const void* w, std::optional<QuantFormat> format, int in,
                             int dim, int rows, int k, const int* expert, const float* weight, const int* slot_of,
                             const void* bias, const float* shared_out, const float* shared_gate, float* out,
                             cudaStream_t stream, bool accumulate = false);

// The gated feed-forward's activation: SiLU (SwiGLU: Llama, Qwen, Mistral),
// tanh-approximated GELU (GeGLU: Gemma's gelu_pytorch_tanh), or gpt-oss's
// clamped SwiGLU (gate clamped above, up on both sides, at `limit`).
enum class GateActivation { Silu, GeluTanh, ClampedSilu };

// out[r, i] = dtype(act(gate_up[r, i], gate_up[r, hidden + i])), act(g, u) =
// silu(g) * u, gelu_tanh(g) * u, or clamped_swiglu(g, u, limit)
//   (reference: swiglu_ffn() in swiglu.cpp, geglu_ffn() in geglu.cpp, clamped_swiglu() in swiglu.cpp)
void launch_swiglu(const float* gate_up, int rows, int hidden, void* out, DType dtype, cudaStream_t stream,
                   GateActivation activation = GateActivation::Silu, float limit = 0.0f);

// y[row(r), j] += bias[brow(r), j] for r < rows, j < width, in place, with
// row(r) = y_rows ? y_rows[r] : r and brow(r) = bias_rows ? bias_rows[r] : 0;
// y float [.., ldy], bias [.., width] of `dtype`. gpt-oss's router bias
// (rows of scores) and expert biases (choices: their slots' rows, their
// experts' biases).        (reference: route() and expert_linear() in moe.cpp)
void launch_add_bias(float* y, int ldy, const int* y_rows, int rows, int width, const void* bias,
                     const int* bias_rows, DType dtype, cudaStream_t stream);

// logits[i] = cap * tanh(logits[i] / cap) for i < n, in place: Gemma's final
// soft cap.                     (reference: logits_of_wanted_rows() in forward.cpp)
void launch_logit_softcap(float* logits, size_t n, float cap, cudaStream_t stream);

// ---- sampling (sample.cu) ----

// Candidates one sampled row may keep on the device after top-k: rows whose
// top-k keeps more (top_k 0 or above this, over more finite logits than
// this) are left to the host's reference sampler (status kSampleOnHost).
inline constexpr int kSampleMaxKept = 1024;

// One wanted row's sampling rule, as the device reads it (SamplingParams and
// the row's uniform, reference/sampling/sampler.h). The host fills it only
// for valid parameters and a uniform in [0, 1); top_k < 0 asks the kernel to
// leave the row to the host.
struct DeviceSamplingRow {
  float temperature = 1.0f;  // 0: greedy
  int top_k = 0;             // 0: no cut
  float top_p = 1.0f;
  double uniform = 0.0;
  float min_p = 0.0f;        // 0: no cut (after uniform: positional {T, k, p, u} initialisers stay valid)
  // The row's logit adjustments (penalties and bias): adjustments[adjust_begin ..
  // adjust_begin + adjust_count) of launch_adjust_rows, with this factor.
  int adjust_begin = 0, adjust_count = 0;
  float repetition_penalty = 1.0f;
  int logprobs = -1;         // -1: none; else the top tokens launch_row_logprobs lists
  // The row's token mask (reference/sampling/token_mask.h): masks[mask_row *
  // mask_words ..] of launch_sample_rows; -1: no mask (every token allowed).
  int mask_row = -1;
};

// One token's logit change (reference/sampling/penalties.h, LogitAdjustment).
inline constexpr int kAdjustBanned = 1, kAdjustRepetition = 2;
struct DeviceLogitAdjustment {
  int token = 0;
  int flags = 0;        // kAdjustBanned | kAdjustRepetition
  double offset = 0.0;  // bias - (frequency_penalty * count + presence_penalty)
};

// adjusted[r] = logits[r] with row r's adjustments applied (adjusted_logit()
// of penalties.cpp: in float64, x / r or x * r for the repetition penalty,
// then one rounding of x + offset to float; -inf for a ban), for every row;
// the token ids are inside the vocabulary (the host checks). One block per row.
void launch_adjust_rows(const float* logits, float* adjusted, int rows, int vocab, const DeviceSamplingRow* params,
                        const DeviceLogitAdjustment* adjustments, cudaStream_t stream);


enum DeviceSampleStatus : int {
  kSampleOk = 0,          // token is sample_with_uniform's answer
  kSampleNaN = 1,         // the logit at `index` (the first bad one) is NaN
  kSamplePosInf = 2,      // the logit at `index` (the first bad one) is +inf
  kSampleAllMasked = 3,   // every logit is -inf
  kSampleOnHost = 4,      // not sampled here: top_k < 0, or top-k keeps more than kSampleMaxKept
};

struct DeviceSampledToken {
  int token = -1;  // valid when status == kSampleOk
  int status = kSampleOk;
  int index = -1;  // the first bad logit's index for kSampleNaN / kSamplePosInf
};

// out[r] for each row r < rows of logits [rows, vocab] (float32, contiguous):
// greedy rows (temperature 0) the first maximum; sampled rows temperature ->
// top-k -> top-p -> min-p -> softmax -> inverse CDF with params[r].uniform, in float64
// in the reference's order; bad logits reported as the reference would
// throw them (first NaN/+inf index, or every logit -inf). One block per row.
// A row with params[r].mask_row >= 0 reads every logit its mask (one bit per
// token, bit t % 32 of word t / 32 of masks + mask_row * mask_words) does not
// allow as -inf, before anything else looks at it: masked tokens are never
// candidates, and a masked NaN is no error (as apply_token_mask then the
// reference sampler). masks may be null when no row has one.
// (reference: sample_with_uniform(logits, params, u, mask) in reference/sampling/sampler.cpp)
void launch_sample_rows(const float* logits, int rows, int vocab, const DeviceSamplingRow* params,
                        DeviceSampledToken* out, cudaStream_t stream, const unsigned* masks = nullptr,
                        int mask_words = 0);

// The most likely tokens one row's logprobs may list (kMaxTopLogprobs of reference/sampling/logprobs.h).
inline constexpr int kDeviceMaxTopLogprobs = 20;
struct DeviceTokenLogprobs {
  double logprob = 0.0;  // of the sampled token
  int n = 0;             // entries of top below
  int top_token[kDeviceMaxTopLogprobs] = {};
  double top_logprob[kDeviceMaxTopLogprobs] = {};
};

// For each row with params[r].logprobs >= 0 whose sampled[r] is kSampleOk:
// token_logprobs() of reference/sampling/logprobs.cpp on the raw logits:
// log p_i = l_i - (max + log(sum_j exp(l_j - max))) in float64 over the finite
// logits (the sum in a block's order, not in id order: within a few ulps of
// the reference's), and the params[r].logprobs most likely tokens, larger
// logit first, ties by lower id (exactly the reference's). One block per row;
// other rows are left as they are.
void launch_row_logprobs(const float* logits, int rows, int vocab, const DeviceSamplingRow* params,
                         const DeviceSampledToken* sampled, DeviceTokenLogprobs* out, cudaStream_t stream);

}  // namespace astrai::cuda
