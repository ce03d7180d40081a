// Decoding the device's quantized weight formats (cuda/quant_format.h) in
// registers, one "item" at a time, for the mat-vec (matvec_quant.cu) and the
// dequantizer (dequantize.cu). An item is a Q8_0/Q4_0 block (32 weights), a
// group of 32 weights of a Q4_K/Q5_K super-block (one scale and minimum
// each) or a group of 16 of a Q6_K super-block (one scale each):
//   Codec<F>::kBlockElements, kBlockBytes  the block (as quant_format_info,
//                        which device code cannot call: it is a host constexpr),
//   Codec<F>::kItems     items per block,
//   Codec<F>::kElements  weights per item,
//   Codec<F>::decode(block, item, w)  the item's weights in row order.
// Each weight comes from the host decoder's float operations in its order
// (engine/model_files/quant/, which match ggml's bit for bit), written with
// __fmul_rn / __fsub_rn so that nvcc cannot fuse a * b - c into one rounding.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/kernels/dtype_device.cuh"
#include "cuda/quant_format.h"

namespace astrai::cuda {

// The little-endian float16 at p, as float (exact).
__device__ __forceinline__ float half_at(const uint8_t* p) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(p[0] | (p[1] << 8))));
}

// One item's weights, in the order of the row: Codec<F>::decode(block, sub, w)
// for sub-item `sub` of the block starting at `block`.
template <QuantFormat F>
struct Codec;

// Q8_0: [d f16][q int8 x 32];  w = d * q.
template <>
struct Codec<QuantFormat::Q8_0> {
  static constexpr int kBlockElements = 32, kBlockBytes = 34, kItems = 1, kElements = 32;
  __device__ __forceinline__ static void decode(const uint8_t* b, int, float (&w)[kElements]) {
    const float d = half_at(b);
#pragma unroll
    for (int i = 0; i < 32; ++i) w[i] = __fmul_rn(d, float(int8_t(b[2 + i])));
  }
};

// Q4_0: [d f16][16 bytes: weight i in the low nibble of byte i, i + 16 in its high];  w = d * (q - 8).
template <>
struct Codec<QuantFormat::Q4_0> {
  static constexpr int kBlockElements = 32, kBlockBytes = 18, kItems = 1, kElements = 32;
  __device__ __forceinline__ static void decode(const uint8_t* b, int, float (&w)[kElements]) {
    const float d = half_at(b);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int q = b[2 + i];
      w[i] = __fmul_rn(d, float((q & 15) - 8));
      w[i + 16] = __fmul_rn(d, float((q >> 4) - 8));
    }
  }
};

// The 6-bit scale and minimum of group g of Q4_K/Q5_K's 12 scale bytes at s
// (engine/model_files/quant/k_scale_min.h draws the packing).
__device__ __forceinline__ void scale_min(const uint8_t* s, int g, int& sc, int& m) {
  if (g < 4) {
    sc = s[g] & 63;
    m = s[g + 4] & 63;
  } else {
    sc = (s[g + 4] & 15) | ((s[g - 4] >> 6) << 4);
    m = (s[g + 4] >> 4) | ((s[g] >> 6) << 4);
  }
}

// Q4_K and Q5_K, group g of 32: w = (d * sc_g) * q - (dmin * m_g), q the
// nibble (low for even g, high for odd) of qs[32 (g / 2) + l], plus (Q5_K) 16
// times bit g of qh[l]. Layouts: Q4_K [d][dmin][scales 12][qs 128] (144 bytes),
// Q5_K [d][dmin][scales 12][qh 32][qs 128] (176 bytes).
template <bool kFifthBit>
__device__ __forceinline__ void decode_k_group(const uint8_t* b, int g, float (&w)[32]) {
  const float d = half_at(b), dmin = half_at(b + 2);
  int sc, m;
  scale_min(b + 4, g, sc, m);
  const float scale = __fmul_rn(d, float(sc)), min = __fmul_rn(dmin, float(m));
  const uint8_t* qs = b + (kFifthBit ? 48 : 16) + 32 * (g / 2);
  const int shift = 4 * (g % 2);
#pragma unroll
  for (int l = 0; l < 32; ++l) {
    int q = (qs[l] >> shift) & 15;
    if constexpr (kFifthBit) q += 16 * ((b[16 + l] >> g) & 1);
    w[l] = __fsub_rn(__fmul_rn(scale, float(q)), min);
  }
}

template <>
struct Codec<QuantFormat::Q4_K> {
  static constexpr int kBlockElements = 256, kBlockBytes = 144, kItems = 8, kElements = 32;
  __device__ __forceinline__ static void decode(const uint8_t* b, int g, float (&w)[kElements]) {
    decode_k_group<false>(b, g, w);
  }
};

template <>
struct Codec<QuantFormat::Q5_K> {
  static constexpr int kBlockElements = 256, kBlockBytes = 176, kItems = 8, kElements = 32;
  __device__ __forceinline__ static void decode(const uint8_t* b, int g, float (&w)[kElements]) {
    decode_k_group<true>(b, g, w);
  }
};

// Q6_K, group g of 16: [ql 128][qh 64][scales int8 x 16][d f16] (210 bytes);
// element e (h = e / 128, k = (e % 128) / 32, l = e % 32):
//   q = (nibble k / 2 of ql[64 h + 32 (k % 2) + l]) | ((qh[32 h + l] >> 2 k) & 3) << 4,
//   w = (d * scales[g]) * (q - 32).
template <>
struct Codec<QuantFormat::Q6_K> {
  static constexpr int kBlockElements = 256, kBlockBytes = 210, kItems = 16, kElements = 16;
  __device__ __forceinline__ static void decode(const uint8_t* b, int g, float (&w)[kElements]) {
    const float scale = __fmul_rn(half_at(b + 208), float(int8_t(b[192 + g])));
    const int e0 = 16 * g, h = e0 / 128, k = (e0 % 128) / 32, l0 = e0 % 32;
    const uint8_t* ql = b + 64 * h + 32 * (k % 2) + l0;
    const uint8_t* qh = b + 128 + 32 * h + l0;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int q = ((ql[i] >> (4 * (k / 2))) & 15) | (((qh[i] >> (2 * k)) & 3) << 4);
      w[i] = __fmul_rn(scale, float(q - 32));
    }
  }
};

// The codecs' blocks are quant_format_info's.
template <QuantFormat F>
constexpr bool codec_matches_format() {
  return Codec<F>::kBlockElements == quant_format_info(F).block_elements &&
         Codec<F>::kBlockBytes == quant_format_info(F).block_bytes &&
         Codec<F>::kItems * Codec<F>::kElements == Codec<F>::kBlockElements;
}
static_assert(codec_matches_format<QuantFormat::Q8_0>() && codec_matches_format<QuantFormat::Q4_0>() &&
              codec_matches_format<QuantFormat::Q4_K>() && codec_matches_format<QuantFormat::Q5_K>() &&
              codec_matches_format<QuantFormat::Q6_K>());

}  // namespace astrai::cuda
