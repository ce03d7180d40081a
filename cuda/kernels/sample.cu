// Sampling on the device, one block per wanted row. Reference:
// sample_with_uniform() in reference/sampling/sampler.cpp, followed step by
// step so that the token has the reference's bits:
//
//   mask         a row with a token mask (mask_row >= 0) reads each token its
//                mask does not allow as -inf, in every phase below, as the
//                reference's apply_token_mask does to its copy of the row.
//   bad logits   the first NaN or +inf index, or "every logit is -inf"
//                (candidates_from_logits / greedy_candidate), reported as a
//                status; the host re-runs the reference on such a row for
//                its error text.
//   greedy       temperature 0: the first maximum (largest logit, lowest id
//                on ties; -0 and +0 are equal), one pass and a block reduction.
//   top-k        the k most likely finite logits, ties at the k-th value to
//                the lower ids (keep_top_k), found without sorting the row:
//                a radix select on the float's order-preserving 32-bit key,
//                four bits per pass (each pass counts, per thread and then
//                per block, the elements of the prefix so far whose next
//                digit is >= d for d = 0..15), stopping early once every
//                element of the prefix is kept; then the survivors are
//                gathered in ascending id order (a block scan of per-thread
//                counts over contiguous chunks of the row).
//   temperature  l = double(logit) / double(T), as apply_temperature does.
//                Ordering on the float logits is ordering on l: for finite
//                floats and a finite T > 0 the quotient lies in [2^-277,
//                2^277], where double rounding (2^-53 relative) cannot merge
//                two floats (at least 2^-24 apart, relative) nor reorder them.
//   top-p        (p < 1) the survivors sorted "more likely first" (bitonic,
//                in shared memory), then one thread takes the softmax sum and
//                the running mass in that order, in float64, and cuts at the
//                first prefix whose mass reaches p (keep_top_p).
//   min-p        (min_p > 0) a kept candidate stays when exp(l - max) >= min_p,
//                the weight the softmax computes anyway (keep_min_p).
//   draw         softmax over the kept candidates in ascending id order and
//                inverse_cdf with the row's uniform, one thread, float64, in
//                the reference's order: total, then the first index whose
//                cumulative sum exceeds u * total, else the last positive.
//
// Every floating-point operation above is an IEEE-rounded float64 operation
// in the reference's order, except exp(): where the device's exp() returns
// the host's bits (the emulated build calls the host's), the token is the
// reference's. On a GPU, CUDA's double exp() is within 1 ulp, so a token can
// differ only where u * total falls within about 4 n 2^-53 (relative) of a
// boundary of the reference's CDF, or the top-p mass within that of p, with
// n <= kSampleMaxKept kept candidates (docs/cuda.md).
//
// Rows whose top-k keeps more than kSampleMaxKept candidates (top_k 0 or
// above the cap, over more finite logits than the cap) are left to the host
// (kSampleOnHost). No atomics: every count is a block reduction or scan in
// shared memory, with the same order on every run.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/kernels/kernels.h"
#include "cuda/kernels/launch.cuh"  // last: in the emulated build it defines CUDA's built-ins

namespace astrai::cuda {
namespace {

constexpr int kMaxKept = kSampleMaxKept;
constexpr int kDigitBits = 4;
constexpr int kDigits = 1 << kDigitBits;  // 16: a selection pass counts 16 thresholds
constexpr int kGroup = 16;                // a reduction's first level: each thread sums 16 entries
constexpr int kNoIndex = 0x7fffffff;

// The block's shared scalars.
struct Shared {
  double total;
  float row_max;
  int argmax, first_bad, finite, cut;
  int digit_ge[kDigits];  // a selection pass: elements of the prefix whose next digit is >= d
};

constexpr size_t round8(size_t n) { return (n + 7) / 8 * 8; }
constexpr size_t larger(size_t a, size_t b) { return a > b ? a : b; }

// Dynamic shared memory: region A is reused by each phase in turn (pass-one
// reduction, selection counters, gather scan, then softmax terms, the sorted
// survivors and the kept flags); region B holds the survivors; region C the
// scalars and the scan's group sums.
template <int Threads>
struct Layout {
  static_assert(kDigits == kGroup && Threads % kGroup == 0 && Threads >= 2 * kGroup,
                "a selection pass reduces its 16 counters with Threads / 16 threads each");
  static constexpr int kGroups = Threads / kGroup;
  static constexpr size_t kA = round8(larger(size_t(kDigits) * Threads * 4, size_t(kMaxKept) * (8 + 4 + 4 + 1)));
  static constexpr size_t kB = size_t(kMaxKept) * (4 + 4);
  static constexpr size_t kC = round8(sizeof(Shared) + 2 * size_t(kGroups) * 4);
  static constexpr size_t kBytes = kA + kB + kC;
};

// Larger float, larger key; -0 and +0 one key (they are one logit).
__device__ __forceinline__ unsigned order_key(float x) {
  const unsigned bits = unsigned(__float_as_int(x == 0.0f ? 0.0f : x));
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// more_likely() of sampler.cpp on (logit, id): larger logit first, ties by lower id.
__device__ __forceinline__ bool before(float a, int ia, float b, int ib) { return a > b || (a == b && ia < ib); }

__device__ __forceinline__ void take_max(float& v, int& i, float v2, int i2) {
  if (v2 > v || (v2 == v && i2 < i)) {
    v = v2;
    i = i2;
  }
}

__device__ __forceinline__ void write_result(DeviceSampledToken* out, int token, int status, int index) {
  out->token = token;
  out->status = status;
  out->index = index;
}

// Min 1 block per SM: one block per sampled row, so a batch's rows are few
// beside 132 SMs; without it ptxas kept the 64-256-thread instances at 48
// registers and spilled 16 bytes (bench/ptxas-report.sh).
template <int Threads>
__global__ void __launch_bounds__(Threads, 1)
    sample_rows_kernel(const float* __restrict__ logits, int vocab, const DeviceSamplingRow* __restrict__ params,
                       DeviceSampledToken* __restrict__ out, const unsigned* __restrict__ masks, int mask_words) {
  using L = Layout<Threads>;
  ASTRAI_DYNAMIC_SHARED(double, smem);
  char* const base = reinterpret_cast<char*>(smem);
  // Region A, one use per phase.
  float* const red_max = reinterpret_cast<float*>(base);  // pass one: [Threads] each
  int* const red_arg = reinterpret_cast<int*>(red_max + Threads);
  int* const red_bad = red_arg + Threads;
  int* const red_finite = red_bad + Threads;
  int* const counters = reinterpret_cast<int*>(base);  // selection: [kDigits][Threads]
  int* const scan_gt = reinterpret_cast<int*>(base);   // gather: [Threads] each
  int* const scan_eq = scan_gt + Threads;
  double* const e = smem;  // after the gather: [kMaxKept] each
  float* const sorted_logit = reinterpret_cast<float*>(e + kMaxKept);
  int* const sorted_index = reinterpret_cast<int*>(sorted_logit + kMaxKept);
  unsigned char* const kept = reinterpret_cast<unsigned char*>(sorted_index + kMaxKept);
  // Region B: the top-k survivors in ascending id order.
  float* const cand_logit = reinterpret_cast<float*>(base + L::kA);
  int* const cand_id = reinterpret_cast<int*>(cand_logit + kMaxKept);
  // Region C.
  Shared& s = *reinterpret_cast<Shared*>(base + L::kA + L::kB);
  int* const group_gt = reinterpret_cast<int*>(base + L::kA + L::kB + sizeof(Shared));
  int* const group_eq = group_gt + L::kGroups;

  const int t = int(threadIdx.x);
  const int row = int(blockIdx.x);
  const float* const x = logits + size_t(row) * size_t(vocab);
  const DeviceSamplingRow p = params[row];
  DeviceSampledToken* const result = out + row;
  const float inf = __int_as_float(0x7f800000);
  // Every read of the row goes through logit(): a token the row's mask does
  // not allow reads as -inf (apply_token_mask), so no phase below sees it.
  const unsigned* const allowed = p.mask_row >= 0 ? masks + size_t(p.mask_row) * size_t(mask_words) : nullptr;
  const auto logit = [x, allowed, inf](int j) {
    return allowed && !((allowed[j >> 5] >> (j & 31)) & 1u) ? -inf : x[j];
  };
  if (p.top_k < 0) {  // the host keeps this row
    if (t == 0) write_result(result, -1, kSampleOnHost, -1);
    return;
  }

  // ---- pass one: the first bad logit, the finite count, the first maximum ----
  float best = -inf;
  int best_i = kNoIndex, first_bad = kNoIndex, finite = 0;
  for (int j = t; j < vocab; j += Threads) {
    const float v = logit(j);
    if (!(v < inf)) {  // NaN or +inf
      if (first_bad == kNoIndex) first_bad = j;
    } else if (v > -inf) {
      ++finite;
      if (v > best) {  // strict: this thread's earlier index wins a tie
        best = v;
        best_i = j;
      }
    }
  }
  red_max[t] = best;
  red_arg[t] = best_i;
  red_bad[t] = first_bad;
  red_finite[t] = finite;
  __syncthreads();
  if (t < L::kGroups) {
    const int first = t * kGroup;
    for (int i = first + 1; i < first + kGroup; ++i) {
      take_max(red_max[first], red_arg[first], red_max[i], red_arg[i]);
      red_bad[first] = min(red_bad[first], red_bad[i]);
      red_finite[first] += red_finite[i];
    }
  }
  __syncthreads();
  if (t == 0) {
    float v = red_max[0];
    int i = red_arg[0], bad = red_bad[0], n = red_finite[0];
    for (int g = 1; g < L::kGroups; ++g) {
      take_max(v, i, red_max[g * kGroup], red_arg[g * kGroup]);
      bad = min(bad, red_bad[g * kGroup]);
      n += red_finite[g * kGroup];
    }
    s.row_max = v;
    s.argmax = i;
    s.first_bad = bad;
    s.finite = n;
  }
  __syncthreads();
  if (s.first_bad != kNoIndex) {
    if (t == 0) {
      const float bad = logit(s.first_bad);
      write_result(result, -1, bad != bad ? kSampleNaN : kSamplePosInf, s.first_bad);
    }
    return;
  }
  if (s.finite == 0) {
    if (t == 0) write_result(result, -1, kSampleAllMasked, -1);
    return;
  }
  if (p.temperature == 0.0f) {  // greedy
    if (t == 0) write_result(result, s.argmax, kSampleOk, -1);
    return;
  }
  const int k = (p.top_k == 0 || p.top_k > s.finite) ? s.finite : p.top_k;
  if (k > kMaxKept) {
    if (t == 0) write_result(result, -1, kSampleOnHost, -1);
    return;
  }

  // ---- top-k: which keys survive ----
  // A finite logit survives when (key & mask) > prefix, or when it equals
  // prefix and fewer than `need` such logits come before it in id order.
  unsigned prefix = 0, mask = 0;
  int need = 0;
  if (k == s.finite) {  // every finite logit
    prefix = order_key(-inf);
    mask = ~0u;
  } else if (k == 1) {  // the first maximum
    prefix = order_key(s.row_max);
    mask = ~0u;
    need = 1;
  } else {
    int remaining = k;  // still to take among the elements of the prefix
    for (int shift = 32 - kDigitBits; shift >= 0; shift -= kDigitBits) {
      int ge[kDigits];
#pragma unroll
      for (int d = 0; d < kDigits; ++d) ge[d] = 0;
      for (int j = t; j < vocab; j += Threads) {
        const float v = logit(j);
        if (v == -inf) continue;
        const unsigned key = order_key(v);
        if ((key & mask) != prefix) continue;
        const int digit = int((key >> shift) & unsigned(kDigits - 1));
#pragma unroll
        for (int d = 0; d < kDigits; ++d) ge[d] += digit >= d ? 1 : 0;
      }
#pragma unroll
      for (int d = 0; d < kDigits; ++d) counters[d * Threads + t] = ge[d];
      __syncthreads();
      {  // Threads = kDigits * kGroups: each thread sums 16 entries of one counter
        int* const c = counters + (t / L::kGroups) * Threads + (t % L::kGroups) * kGroup;
        int sum = 0;
        for (int i = 0; i < kGroup; ++i) sum += c[i];
        c[0] = sum;
      }
      __syncthreads();
      if (t < kDigits) {
        int sum = 0;
        for (int g = 0; g < L::kGroups; ++g) sum += counters[t * Threads + g * kGroup];
        s.digit_ge[t] = sum;
      }
      __syncthreads();
      int digit = kDigits - 1;  // the largest digit with enough elements at or above it
      while (s.digit_ge[digit] < remaining) --digit;
      const int above = digit + 1 < kDigits ? s.digit_ge[digit + 1] : 0;
      remaining -= above;
      prefix |= unsigned(digit) << shift;
      mask |= unsigned(kDigits - 1) << shift;
      if (s.digit_ge[digit] - above == remaining) break;  // every element of the prefix is kept
    }
    need = remaining;
  }

  // ---- gather the k survivors in ascending id order ----
  const int chunk = (vocab + Threads - 1) / Threads;
  const int begin = min(vocab, t * chunk), end = min(vocab, begin + chunk);
  int gt = 0, eq = 0;
  for (int j = begin; j < end; ++j) {
    const float v = logit(j);
    if (v == -inf) continue;
    const unsigned key = order_key(v) & mask;
    gt += key > prefix ? 1 : 0;
    eq += key == prefix ? 1 : 0;
  }
  scan_gt[t] = gt;
  scan_eq[t] = eq;
  __syncthreads();
  if (t < L::kGroups) {  // exclusive scan of each group of 16 threads' counts
    int a = 0, b = 0;
    for (int i = t * kGroup; i < (t + 1) * kGroup; ++i) {
      const int ga = scan_gt[i], gb = scan_eq[i];
      scan_gt[i] = a;
      scan_eq[i] = b;
      a += ga;
      b += gb;
    }
    group_gt[t] = a;
    group_eq[t] = b;
  }
  __syncthreads();
  if (t == 0) {  // exclusive scan of the group sums
    int a = 0, b = 0;
    for (int g = 0; g < L::kGroups; ++g) {
      const int ga = group_gt[g], gb = group_eq[g];
      group_gt[g] = a;
      group_eq[g] = b;
      a += ga;
      b += gb;
    }
  }
  __syncthreads();
  int gt_rank = group_gt[t / kGroup] + scan_gt[t], eq_rank = group_eq[t / kGroup] + scan_eq[t];
  for (int j = begin; j < end; ++j) {
    const float v = logit(j);
    if (v == -inf) continue;
    const unsigned key = order_key(v) & mask;
    int at = -1;
    if (key > prefix) {
      at = gt_rank + min(eq_rank, need);
      ++gt_rank;
    } else if (key == prefix) {
      if (eq_rank < need) at = gt_rank + eq_rank;
      ++eq_rank;
    }
    if (at >= 0) {
      cand_logit[at] = v;
      cand_id[at] = j;
    }
  }
  __syncthreads();

  // ---- temperature and top-p ----
  const double temperature = double(p.temperature);
  // The largest candidate; top-k and top-p always keep a logit of this value.
  const double max_logit = double(s.row_max) / temperature;
  if (p.top_p < 1.0f && k > 1) {
    int n = 2;
    while (n < k) n *= 2;
    for (int i = t; i < n; i += Threads) {
      sorted_logit[i] = i < k ? cand_logit[i] : -inf;  // padding sorts last
      sorted_index[i] = i < k ? i : kNoIndex;
    }
    __syncthreads();
    // Bitonic sort into "more likely first" (a survivor's index is its id order).
    for (int size = 2; size <= n; size *= 2)
      for (int stride = size / 2; stride > 0; stride /= 2) {
        for (int q = t; q < n / 2; q += Threads) {
          const int i = (q / stride) * 2 * stride + q % stride, j = i + stride;
          const float a = sorted_logit[i], b = sorted_logit[j];
          const int ia = sorted_index[i], ib = sorted_index[j];
          const bool ascending = (i & size) == 0;
          if (ascending ? before(b, ib, a, ia) : before(a, ia, b, ib)) {
            sorted_logit[i] = b;
            sorted_logit[j] = a;
            sorted_index[i] = ib;
            sorted_index[j] = ia;
          }
        }
        __syncthreads();
      }
    for (int j = t; j < k; j += Threads) e[j] = exp(double(sorted_logit[j]) / temperature - max_logit);
    __syncthreads();
    if (t == 0) {  // softmax's sum, in sorted order
      double total = 0.0;
      for (int j = 0; j < k; ++j) total += e[j];
      s.total = total;
    }
    __syncthreads();
    for (int j = t; j < k; j += Threads) e[j] = e[j] / s.total;
    __syncthreads();
    if (t == 0) {  // the shortest prefix whose mass reaches p
      const double threshold = double(p.top_p);
      double mass = 0.0;
      int cut = k;
      for (int j = 0; j < k; ++j) {
        mass += e[j];
        if (mass >= threshold) {
          cut = j + 1;
          break;
        }
      }
      s.cut = cut;
    }
    __syncthreads();
    for (int j = t; j < k; j += Threads) kept[sorted_index[j]] = j < s.cut ? 1 : 0;
  } else {
    for (int i = t; i < k; i += Threads) kept[i] = 1;
  }
  __syncthreads();

  // ---- min-p, softmax over the kept candidates in id order, then the draw ----
  // A kept candidate's weight exp(l / T - max) is the ratio keep_min_p
  // compares with min_p (the same expression on the same operands; the
  // largest kept logit is the row's maximum, which top-k and top-p keep).
  const double min_p = double(p.min_p);
  for (int i = t; i < k; i += Threads) {
    e[i] = kept[i] ? exp(double(cand_logit[i]) / temperature - max_logit) : 0.0;
    if (kept[i] && e[i] < min_p) {
      kept[i] = 0;
      e[i] = 0.0;
    }
  }
  __syncthreads();
  if (t == 0) {
    double total = 0.0;
    for (int i = 0; i < k; ++i)
      if (kept[i]) total += e[i];
    s.total = total;
  }
  __syncthreads();
  for (int i = t; i < k; i += Threads)
    if (kept[i]) e[i] = e[i] / s.total;
  __syncthreads();
  if (t == 0) {  // inverse_cdf over the kept probabilities
    double total = 0.0;
    int last_positive = -1;
    for (int i = 0; i < k; ++i)
      if (kept[i]) {
        total += e[i];
        if (e[i] > 0.0) last_positive = i;
      }
    const double target = p.uniform * total;
    double cumulative = 0.0;
    int chosen = last_positive;
    for (int i = 0; i < k; ++i)
      if (kept[i]) {
        cumulative += e[i];
        if (cumulative > target) {
          chosen = i;
          break;
        }
      }
    write_result(result, cand_id[chosen], kSampleOk, -1);
  }
}

template <int Threads>
void launch_with(const float* logits, int rows, int vocab, const DeviceSamplingRow* params, DeviceSampledToken* out,
                 cudaStream_t stream, const unsigned* masks, int mask_words) {
  ASTRAI_LAUNCH(sample_rows_kernel<Threads>, rows, Threads, Layout<Threads>::kBytes, stream)(logits, vocab, params,
                                                                                             out, masks, mask_words);
}

}  // namespace

void launch_sample_rows(const float* logits, int rows, int vocab, const DeviceSamplingRow* params,
                        DeviceSampledToken* out, cudaStream_t stream, const unsigned* masks, int mask_words) {
  if (rows == 0) return;
  if (vocab <= 0) throw std::invalid_argument("launch_sample_rows: vocabulary of " + std::to_string(vocab));
  // About 32 or more logits per thread: small vocabularies take small blocks.
  if (vocab <= 2048)
    launch_with<64>(logits, rows, vocab, params, out, stream, masks, mask_words);
  else if (vocab <= 8192)
    launch_with<128>(logits, rows, vocab, params, out, stream, masks, mask_words);
  else if (vocab <= 32768)
    launch_with<256>(logits, rows, vocab, params, out, stream, masks, mask_words);
  else
    launch_with<512>(logits, rows, vocab, params, out, stream, masks, mask_words);
  ASTRAI_CUDA_CHECK_LAUNCH();
}

}  // namespace astrai::cuda
