// The kernel-case registry: one entry per CUDA kernel (or fixed launch
// sequence), shared by the tests and the benchmarks, in the spirit of
// llama.cpp's test-backend-ops `test_case` and llm.c's "validate, then
// benchmark". A case holds:
//  - a shape generator (draw) for the tests' random small shapes, and the
//    realistic shapes the benchmark times (bench_shapes);
//  - prepare(): the inputs on the device for one shape, outputs NaN-filled;
//    its KernelRun launches kernel variant v (v1, v2, ... live side by side),
//    downloads the result, computes the reference function's answer on the
//    same inputs, and knows the bytes and FLOPs one launch must move;
//  - the tolerance, with its reason.
// tests/cuda/test_kernel_cases.cpp checks every variant of every case on
// random shapes, and that every file of cuda/kernels/*.cu is some case's
// kernel; bench/bench_cuda.cpp validates each on one small shape, then times
// it on bench_shapes. Adding a kernel: its .cu, one case (a file here, listed
// in kernel_cases.cpp) and one dispatch line in its KernelRun::launch;
// tests/cuda/README.md says the same.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/dtype.h"

namespace astrai::cuda::cases {

// How a case draws its shape: pick(lo, hi) returns an integer in [lo, hi].
// The tests pass RapidCheck's generator (so a failure shrinks to a small
// shape), the benchmark a seeded std::mt19937.
using Pick = std::function<int(int lo, int hi)>;
int pick_from(const Pick& pick, std::initializer_list<int> choices);
// A seed for a shape's values.
uint32_t pick_seed(const Pick& pick);
// A row length for the row-per-block kernels: any in [1, 3000] half the time,
// else one of `edges` (a block size's edges, a cap, a real vocabulary).
int pick_vocab(const Pick& pick, std::initializer_list<int> edges);

// A shape: the storage type, a seed for the values, and named dimensions.
struct KernelShape {
  DType dtype = DType::Float32;
  uint32_t seed = 1;
  std::map<std::string, int> dims;

  int operator[](const std::string& name) const;  // throws std::out_of_range naming a missing dimension
  // An optional dimension (a feature a later model added: off where a
  // shape written before it leaves it out).
  int get(const std::string& name, int absent) const;
  std::string describe() const;                   // "bf16 seed=7 dim=100 rows=3"
};

// One shape of one case, ready to run.
class KernelRun {
 public:
  virtual ~KernelRun() = default;
  // Queues kernel variant `variant` (1 .. KernelCase::variants) on `stream`.
  virtual void launch(int variant, cudaStream_t stream) = 0;
  // The outputs (after the device finishes), as float.
  virtual std::vector<float> result() = 0;
  // The reference function's answer on the same inputs (host; slow for large shapes).
  virtual std::vector<float> expected() = 0;
  // "" when the outputs match the reference within `rtol` (KernelCase::tolerance),
  // else the first mismatch. By default compare() of device_arrays.h on
  // result() and expected(); a case whose outputs mix exact ids with values
  // of unrelated scales (row_logprobs) states its own check here.
  virtual std::string check(double rtol);

  // Whether launch() first rewrites the inputs a launch updates in place
  // (rmsnorm's residual stream, rope's q) so every launch computes on the
  // same values. The benchmark turns it off to time the kernel alone: the
  // first GPU run timed a 4 MB host upload with each rmsnorm launch. The
  // values then drift from launch to launch; the traffic and work do not.
  bool restore_inputs = true;

  double bytes = 0.0;  // global memory one launch must read and write, at the least
  double flops = 0.0;  // arithmetic of one launch (a multiply-add is 2)
};

struct Tolerance {
  double float32 = 0.0, bfloat16 = 0.0;  // rtol of device_arrays.h's compare(); 0 means exact
  std::string why;
  double operator()(DType t) const { return t == DType::Float32 ? float32 : bfloat16; }
};

struct KernelCase {
  std::string name;       // "rmsnorm"
  std::string kernel;     // where the kernel is: "cuda/kernels/residual_rmsnorm.cu" (each file named in full or
                          // after a first "cuda/kernels/...": the completeness test reads its file names)
  std::string reference;  // what it must compute: "rmsnorm() in reference/rmsnorm.cpp"
  int variants = 1;
  Tolerance tolerance;
  std::function<KernelShape(const Pick&)> draw;
  std::vector<KernelShape> bench_shapes;
  std::function<std::unique_ptr<KernelRun>(const KernelShape&)> prepare;
};

// Every case, in a fixed order.
const std::vector<KernelCase>& kernel_cases();

// The cases, one function per file of this folder.
KernelCase convert_case();
KernelCase embedding_case();
KernelCase rmsnorm_case();
KernelCase rope_kv_write_case();
KernelCase swiglu_case();
KernelCase logit_softcap_case();
KernelCase add_bias_case();
KernelCase paged_attention_case();
KernelCase gemm_case();
KernelCase matvec_case();
KernelCase matvec_fused_case();
KernelCase matvec_quant_case();
KernelCase dequantize_case();
KernelCase embedding_quant_case();
KernelCase sample_case();
KernelCase adjust_logits_case();
KernelCase row_logprobs_case();
KernelCase moe_case();

}  // namespace astrai::cuda::cases
