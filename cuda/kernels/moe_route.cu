// Mixture-of-Experts routing and its plan. Reference: route() in
// reference/moe.cpp.
//
// moe_route: one thread per row picks the k best experts by k passes over
// the row's scores (gpt-oss's router bias added to each as it is read):
// pass j takes the best expert ranked after pass j-1's choice in the order
// (score descending, index ascending), which is the order of the
// reference's stable sort, so the choice (ties to the lower
// index, a NaN score ranked as -inf) is the reference's exactly. The weights
// follow the reference's float operations one by one (exp of the score less
// the maximum, a sum in index or choice order, one division each). At 128
// experts and k = 8 a row is about a thousand comparisons: routing is never
// the time of a step, the experts' weights are.
//
// moe_plan: the choices sorted by expert for the grouped mat-vec
// (moe_matvec.cu). One block; thread t owns experts t, t + blockDim, ...
// and finds its experts' choices by scanning all of them in choice order,
// so every slot is a function of the choices alone (no atomics, nothing
// that depends on timing). Its cost grows as experts x choices (128 x 512
// at a decode step of 64 rows; a long prefill's 16k choices make it tens of
// microseconds a layer).
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/dtype_device.cuh"
#include "cuda/kernels/kernels.h"

namespace astrai::cuda {
namespace {

constexpr int kRouteThreads = 64;
constexpr int kPlanThreads = 256;

// The reference's ranking value: a NaN score ranks below every number.
__device__ __forceinline__ float rank_of(float s) { return s != s ? -__int_as_float(0x7f800000) : s; }

// True when expert a comes before expert b in the order (rank descending, index ascending).
__device__ __forceinline__ bool before(float rank_a, int a, float rank_b, int b) {
  return rank_a > rank_b || (rank_a == rank_b && a < b);
}

// A row's scores as routing reads them: the router's product, plus the
// router bias where the model has one (gpt-oss), added as add_bias.cu adds it.
template <typename B>
struct RowScores {
  const float* row;
  const B* bias;  // null: none
  __device__ __forceinline__ float operator[](int e) const {
    return bias ? __fadd_rn(row[e], to_float(bias[e])) : row[e];
  }
};

// Row r's k experts and their weights (the reference's route()).
template <typename B>
__device__ void route_row(const float* __restrict__ scores, const B* bias, int r, int n_experts, int k,
                          bool top_k_softmax, bool norm_topk, int* __restrict__ expert, float* __restrict__ weight) {
  const RowScores<B> s{scores + size_t(r) * size_t(n_experts), bias};
  int* chosen = expert + size_t(r) * size_t(k);
  float* w = weight + size_t(r) * size_t(k);
  int prev = -1;
  float prev_rank = 0.0f;
  for (int j = 0; j < k; ++j) {
    int best = -1;
    float best_rank = 0.0f;
    for (int e = 0; e < n_experts; ++e) {
      const float re = rank_of(s[e]);
      if (prev >= 0 && !before(prev_rank, prev, re, e)) continue;  // taken by an earlier pass
      if (best < 0 || before(re, e, best_rank, best)) best = e, best_rank = re;
    }
    chosen[j] = best;
    prev = best, prev_rank = best_rank;
  }
  // softmax_copy() of reference/moe.cpp: the maximum (std::max_element: the
  // first largest, a NaN anywhere making every weight NaN either way), exp of
  // each difference, their sum in order, one division each.
  if (top_k_softmax) {
    float max = s[chosen[0]];
    for (int j = 1; j < k; ++j) max = s[chosen[j]] > max ? s[chosen[j]] : max;
    float sum = 0.0f;
    for (int j = 0; j < k; ++j) sum = __fadd_rn(sum, w[j] = expf(__fsub_rn(s[chosen[j]], max)));
    for (int j = 0; j < k; ++j) w[j] = __fdiv_rn(w[j], sum);
    return;
  }
  float max = s[0];
  for (int e = 1; e < n_experts; ++e) max = s[e] > max ? s[e] : max;
  float sum = 0.0f;
  for (int e = 0; e < n_experts; ++e) sum = __fadd_rn(sum, expf(__fsub_rn(s[e], max)));
  float chosen_sum = 0.0f;
  for (int j = 0; j < k; ++j) {
    w[j] = __fdiv_rn(expf(__fsub_rn(s[chosen[j]], max)), sum);
    chosen_sum = __fadd_rn(chosen_sum, w[j]);
  }
  if (norm_topk)
    for (int j = 0; j < k; ++j) w[j] = __fdiv_rn(w[j], chosen_sum);
}

template <typename B>
__global__ void __launch_bounds__(kRouteThreads)
    moe_route_kernel(const float* __restrict__ scores, const B* __restrict__ bias, int rows, int n_experts, int k,
                     bool top_k_softmax, bool norm_topk, int* __restrict__ expert, float* __restrict__ weight) {
  const int r = int(blockIdx.x) * kRouteThreads + int(threadIdx.x);
  if (r < rows) route_row(scores, bias, r, n_experts, k, top_k_softmax, norm_topk, expert, weight);
}

// The plan of the rows * k choices in expert[] (moe_plan, above), by the
// kPlanThreads threads of one block, with 3 * n_experts + 2 ints of dynamic
// shared memory.
__device__ void plan_choices(const int* __restrict__ expert, int rows, int k, int n_experts, MoePlan plan) {
  // count[e], then slot_begin[e] and tile_begin[e] (exclusive prefix sums; index n_experts: the totals).
  ASTRAI_DYNAMIC_SHARED(int, smem);
  int* count = smem;
  int* slot_begin = smem + n_experts;
  int* tile_begin = slot_begin + n_experts + 1;
  const int choices = rows * k;
  for (int e = int(threadIdx.x); e < n_experts; e += kPlanThreads) {
    int n = 0;
    for (int a = 0; a < choices; ++a) n += expert[a] == e;
    count[e] = n;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int slots = 0, tiles = 0;
    for (int e = 0; e < n_experts; ++e) {
      slot_begin[e] = slots, tile_begin[e] = tiles;
      slots += count[e];
      tiles += (count[e] + kMoeTileRows - 1) / kMoeTileRows;
    }
    slot_begin[n_experts] = slots, tile_begin[n_experts] = tiles;
    plan.tiles[0] = tiles;
  }
  __syncthreads();
  for (int e = int(threadIdx.x); e < n_experts; e += kPlanThreads) {
    int slot = slot_begin[e];
    for (int a = 0; a < choices; ++a)
      if (expert[a] == e) {
        plan.slot_of[a] = slot;
        plan.slot_row[slot] = a / k;
        ++slot;
      }
    for (int t = 0; t * kMoeTileRows < count[e]; ++t) {
      const int tile = tile_begin[e] + t;
      plan.tile_expert[tile] = e;
      plan.tile_first[tile] = slot_begin[e] + t * kMoeTileRows;
      plan.tile_rows[tile] = min(kMoeTileRows, count[e] - t * kMoeTileRows);
    }
  }
}

__global__ void __launch_bounds__(kPlanThreads)
    moe_plan_kernel(const int* __restrict__ expert, int rows, int k, int n_experts, MoePlan plan) {
  plan_choices(expert, rows, k, n_experts, plan);
}

// Both in one block, for up to kPlanThreads rows (a decode step's): thread t
// routes row t, and after the barrier (which makes the block's global
// writes visible to the block) the block plans. A row's bits are
// route_row's either way.
template <typename B>
__global__ void __launch_bounds__(kPlanThreads)
    moe_route_plan_kernel(const float* __restrict__ scores, const B* __restrict__ bias, int rows, int n_experts, int k,
                          bool top_k_softmax, bool norm_topk, int* __restrict__ expert, float* __restrict__ weight,
                          MoePlan plan) {
  const int r = int(threadIdx.x);
  if (r < rows) route_row(scores, bias, r, n_experts, k, top_k_softmax, norm_topk, expert, weight);
  __syncthreads();
  plan_choices(expert, rows, k, n_experts, plan);
}

void check_top_k(const char* who, int n_experts, int k) {
  if (k < 1 || k > n_experts)
    throw std::invalid_argument(std::string(who) + ": top-" + std::to_string(k) + " of " + std::to_string(n_experts) +
                                " experts");
}

size_t plan_shared_bytes(const char* who, int n_experts, int k) {
  if (n_experts < 1 || k < 1) throw std::invalid_argument(std::string(who) + ": no experts");
  const size_t smem = size_t(3 * n_experts + 2) * sizeof(int);
  if (smem > 48 * 1024) throw std::invalid_argument(std::string(who) + ": " + std::to_string(n_experts) + " experts");
  return smem;
}

}  // namespace

void launch_moe_route(const float* scores, int rows, int n_experts, int k, ExpertRouting routing, bool norm_topk,
                      int* expert, float* weight, cudaStream_t stream, const void* bias, DType bias_dtype) {
  check_top_k("launch_moe_route", n_experts, k);
  if (rows == 0) return;
  const unsigned blocks = unsigned((rows + kRouteThreads - 1) / kRouteThreads);
  ASTRAI_DISPATCH_DTYPE(bias_dtype, ASTRAI_LAUNCH(moe_route_kernel<Elem>, blocks, kRouteThreads, 0, stream)(
                                        scores, static_cast<const Elem*>(bias), rows, n_experts, k,
                                        routing == ExpertRouting::TopKSoftmax, norm_topk, expert, weight));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

void launch_moe_plan(const int* expert, int rows, int k, int n_experts, const MoePlan& plan, cudaStream_t stream) {
  const size_t smem = plan_shared_bytes("launch_moe_plan", n_experts, k);
  ASTRAI_LAUNCH(moe_plan_kernel, 1, kPlanThreads, smem, stream)(expert, rows, k, n_experts, plan);
  ASTRAI_CUDA_CHECK_LAUNCH();
}

void launch_moe_route_plan(const float* scores, int rows, int n_experts, int k, ExpertRouting routing,
                           bool norm_topk, int* expert, float* weight, const MoePlan& plan, cudaStream_t stream,
                           const void* bias, DType bias_dtype) {
  if (rows > kPlanThreads || rows == 0) {  // a long prefill: many blocks route, one plans
    launch_moe_route(scores, rows, n_experts, k, routing, norm_topk, expert, weight, stream, bias, bias_dtype);
    launch_moe_plan(expert, rows, k, n_experts, plan, stream);
    return;
  }
  check_top_k("launch_moe_route_plan", n_experts, k);
  const size_t smem = plan_shared_bytes("launch_moe_route_plan", n_experts, k);
  ASTRAI_DISPATCH_DTYPE(bias_dtype, ASTRAI_LAUNCH(moe_route_plan_kernel<Elem>, 1, kPlanThreads, smem, stream)(
                                        scores, static_cast<const Elem*>(bias), rows, n_experts, k,
                                        routing == ExpertRouting::TopKSoftmax, norm_topk, expert, weight, plan));
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
