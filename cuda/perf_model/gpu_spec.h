// The numbers of the GPU the performance report models (an H200 SXM), each
// with where it comes from. The report is an estimate from these and from the
// emulator's access stream; bench_cuda on a real GPU prints measured times
// beside it so the model can be checked (docs/cuda-performance.md).
#pragma once

namespace astrai::cuda::perf {

struct GpuSpec {
  const char* name;
  int sms;                        // streaming multiprocessors
  double hbm_bytes_per_s;         // peak DRAM bandwidth
  double bf16_tensor_flops;       // dense bf16 tensor-core peak, FLOP/s
  double fp32_flops;              // non-tensor fp32 FMA peak (2 FLOP per FMA), FLOP/s
  int regs_per_sm;                // 32-bit registers
  int reg_alloc_unit;             // registers are allocated per warp in units of this many
  int max_regs_per_thread;
  int max_threads_per_sm;
  int max_blocks_per_sm;
  int smem_per_sm;                // bytes usable by blocks (after the 1 KiB per block the driver reserves)
  int smem_reserved_per_block;    // bytes
  int max_smem_per_block;         // bytes, with the opt-in
  double kernel_gap_s;            // time between two kernels of one CUDA graph (launch, drain, ramp)
  double per_sm_bytes_per_s;      // what one SM's loads can pull when few SMs run (assumption, see below)
  double dram_latency_s;          // a load's round trip to HBM under load (assumption, see below)
  int loads_in_flight_per_warp;   // independent warp-level loads a warp has outstanding (assumption)
};

// H200 SXM: 132 SMs of Hopper (GH100) at 4.8 TB/s HBM3e (NVIDIA H200 product
// brief); SM limits from the CUDA C++ Programming Guide's compute capability
// 9.0 table (64K registers, 2048 threads, 32 blocks, 228 KiB shared memory of
// which 227 KiB per block, 1 KiB reserved per block); 989 TFLOP/s dense bf16
// and 67 TFLOP/s fp32 (H100 SXM datasheet: the H200 has the same SMs).
// kernel_gap_s and per_sm_bytes_per_s are this model's assumptions, not
// datasheet figures: ~1 us between dependent kernels of a graph (launch
// latency plus the tail of the previous kernel), and one SM pulling at most
// ~2.5x its fair share (4.8 TB/s / 132 = 36 GB/s) when the rest are idle.
// Little's law bounds an SM by the bytes its resident warps keep in flight:
// ~600 ns per HBM round trip under load (microbenchmark papers on Hopper
// report 480-700 ns) and 4 independent loads per warp (what an unrolled
// streaming loop issues before its first use). All four assumptions are
// what bench_cuda's measured column is there to correct.
inline constexpr GpuSpec kH200{
    "H200 SXM", 132, 4.8e12, 989e12, 67e12, 65536, 256, 255, 2048, 32, 233472, 1024, 232448, 1e-6, 90e9, 600e-9, 4,
};

}  // namespace astrai::cuda::perf
