// The emulated device itself (-Dcuda=emulated only): the checks it makes that
// a GPU would not (barriers, shuffle masks), CUDA's semantics it must keep
// (deferred streams, graph capture rules, launch limits, warp shuffles), and
// that a correct kernel gives the same bits in any order of its threads.
#include <cuda_runtime_api.h>
#include <cublasLt.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <functional>

#include "cuda/emulation/emulated_device.h"
#include "cuda/kernels/launch.cuh"
#include "cuda/kernels/kernels.h"
#include "tests/cuda/gpu_test_support.h"

using namespace astrai;
using Catch::Matchers::Contains;

namespace {

constexpr int kFirstBarrierLine = __LINE__ + 3;  // the two __syncthreads() below
__global__ void mismatched_barriers(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

__global__ void early_exit_then_barrier(int* out) {
  if (threadIdx.x == 5) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void warp_sum(const float* in, float* out, unsigned mask) {
  float v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(mask, v, offset);
  out[threadIdx.x] = v;
}

__global__ void add_one(float* x, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] += 1.0f;
}

__global__ void write_at(float* x, int i) { x[i] = 1.0f; }

// Runs `body` in a child process and returns its exit status and what it
// wrote to stderr: an out-of-bounds access ends the process, as on a GPU.
std::pair<int, std::string> in_child(const std::function<void()>& body) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(pipe_fds[0]);
    dup2(pipe_fds[1], 2);
    signal(SIGABRT, SIG_DFL);  // not Catch2's handler: the child just ends
    body();
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string err;
  char buffer[512];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) err.append(buffer, size_t(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {status, err};
}

__global__ void read_dynamic_shared(float* out) {
  ASTRAI_DYNAMIC_SHARED(float, smem);
  out[threadIdx.x] = smem[threadIdx.x];
}

emu::KernelLaunch launch_of(void (*kernel)(int*), int* out, unsigned threads) {
  return emu::KernelLaunch{"test kernel", reinterpret_cast<const void*>(kernel), dim3(1), dim3(threads), 0,
                           [kernel, out] { kernel(out); }};
}

}  // namespace

TEST_CASE("threads waiting at different barriers are reported with both barriers, not hung", "[cuda][emulation]") {
  std::vector<int> out(64, 0);
  CHECK_THROWS_WITH(emu::run_kernel(launch_of(mismatched_barriers, out.data(), 64)),
                    Contains("different barriers") &&
                        Contains("test_emulated_device.cpp:" + std::to_string(kFirstBarrierLine)) &&
                        Contains("test_emulated_device.cpp:" + std::to_string(kFirstBarrierLine + 2)));
}

TEST_CASE("threads exiting while the others wait at a barrier are reported", "[cuda][emulation]") {
  std::vector<int> out(64, 0);
  CHECK_THROWS_WITH(emu::run_kernel(launch_of(early_exit_then_barrier, out.data(), 64)),
                    Contains("exited while the others wait") && Contains("1 thread(s) exited"));
}

TEST_CASE("a warp shuffle reduces as __shfl_down_sync does; a mask missing a live lane is reported",
          "[cuda][emulation]") {
  std::vector<float> in(64), out(64, 0.0f);
  for (int i = 0; i < 64; ++i) in[size_t(i)] = float(i);
  const auto run = [&](unsigned mask) {
    emu::run_kernel(emu::KernelLaunch{"warp_sum", reinterpret_cast<const void*>(warp_sum), dim3(1), dim3(64), 0,
                                      [&, mask] { warp_sum(in.data(), out.data(), mask); }});
  };
  run(0xffffffffu);
  // Lane 0 of each warp holds its warp's sum. A lane whose source lies past
  // the warp gets its own value back (CUDA's rule), so lane 31 doubles at
  // every step: 31 * 2^5; lane 30 doubles four times, then adds lane 31's 31 * 2^4.
  CHECK(out[0] == float(31 * 32 / 2));
  CHECK(out[32] == float((32 + 63) * 32 / 2));
  CHECK(out[31] == 31.0f * 32.0f);
  CHECK(out[30] == 30.0f * 16.0f + 31.0f * 16.0f);
  CHECK_THROWS_WITH(run(0x0000ffffu), Contains("mask 0xffff") && Contains("live lanes 0xffffffff"));
}

TEST_CASE("dynamic shared memory starts as NaN in every block", "[cuda][emulation]") {
  std::vector<float> out(32, 0.0f);
  emu::run_kernel(emu::KernelLaunch{"read_dynamic_shared", reinterpret_cast<const void*>(read_dynamic_shared),
                                    dim3(2), dim3(32), 32 * sizeof(float), [&] { read_dynamic_shared(out.data()); }});
  for (float v : out) CHECK(std::isnan(v));
}

TEST_CASE("streams are deferred: a result read before synchronising is stale", "[cuda][emulation]") {
  float *device = nullptr, *pinned = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), 4 * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&pinned), 4 * sizeof(float)) == cudaSuccess);
  float fresh[4];
  REQUIRE(cudaMemcpy(fresh, device, sizeof fresh, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (float v : fresh) CHECK(std::isnan(v));  // fresh device memory is NaN, never zero
  REQUIRE(cudaMemset(device, 0, 4 * sizeof(float)) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  for (int i = 0; i < 4; ++i) pinned[i] = -7.0f;
  ASTRAI_LAUNCH(add_one, 1, 32, 0, stream)(device, 4);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(pinned, device, 4 * sizeof(float), cudaMemcpyDeviceToHost, stream) == cudaSuccess);
  CHECK(pinned[0] == -7.0f);  // nothing has run yet
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  CHECK(pinned[0] == 1.0f);
  CHECK(pinned[3] == 1.0f);
  // A copy outside any allocation is refused.
  CHECK(cudaMemcpy(device + 3, fresh, sizeof fresh, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  cudaGetLastError();
  cudaStreamDestroy(stream);
  cudaFreeHost(pinned);
  cudaFree(device);
}

TEST_CASE("graph capture refuses what a GPU refuses, and a replay runs the captured work again",
          "[cuda][emulation]") {
  float* device = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), 4 * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaMemset(device, 0, 4 * sizeof(float)) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);

  // An allocation during capture invalidates it.
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
  void* extra = nullptr;
  CHECK(cudaMalloc(&extra, 16) == cudaErrorStreamCaptureUnsupported);
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(stream, &graph) == cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();

  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
  ASTRAI_LAUNCH(add_one, 1, 32, 0, stream)(device, 4);
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  const emu::EmulationCounters before = emu::counters();
  for (int i = 0; i < 3; ++i) REQUIRE(cudaGraphLaunch(exec, stream) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  const emu::EmulationCounters after = emu::counters();
  CHECK(after.graph_launches - before.graph_launches == 3);
  CHECK(after.kernels_run - before.kernels_run == 3);
  float result[4];
  REQUIRE(cudaMemcpy(result, device, sizeof result, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(result[0] == 3.0f);  // captured once, run three times; the capture itself ran nothing
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  cudaFree(device);
}

TEST_CASE("launch limits: threads per block, and dynamic shared memory beyond 48 KiB only after the opt-in",
          "[cuda][emulation]") {
  float* device = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&device), 64 * sizeof(float)) == cudaSuccess);
  ASTRAI_LAUNCH(add_one, 1, 2048, 0, nullptr)(device, 4);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  ASTRAI_LAUNCH(read_dynamic_shared, 1, 32, 64 * 1024, nullptr)(device);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  REQUIRE(cudaFuncSetAttribute(reinterpret_cast<const void*>(read_dynamic_shared),
                               cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024) == cudaSuccess);
  ASTRAI_LAUNCH(read_dynamic_shared, 1, 32, 64 * 1024, nullptr)(device);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(read_dynamic_shared),
                             cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024) == cudaErrorInvalidValue);
  cudaGetLastError();
  cudaFree(device);
}

TEST_CASE("the cuBLASLt stand-in refuses combinations it does not implement", "[cuda][emulation]") {
  cublasLtHandle_t handle = nullptr;
  REQUIRE(cublasLtCreate(&handle) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t op = nullptr;
  REQUIRE(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d16 = nullptr;
  REQUIRE(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, 8, 4, 8) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, 4, 2, 4) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatrixLayoutCreate(&d16, CUDA_R_16BF, 8, 2, 8) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulPreference_t pref = nullptr;
  REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t result{};
  int returned = -1;
  // A bf16 output is a real cuBLASLt configuration that AstrAI never uses: refused, not computed.
  CHECK(cublasLtMatmulAlgoGetHeuristic(handle, op, a, b, d16, d16, pref, 1, &result, &returned) ==
        CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(returned == 0);
  cublasLtMatrixLayout_t bad = nullptr;
  CHECK(cublasLtMatrixLayoutCreate(&bad, CUDA_R_32F, 8, 2, 4) == CUBLAS_STATUS_INVALID_VALUE);  // ld < rows
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(d16);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatmulDescDestroy(op);
  cublasLtDestroy(handle);
}

TEST_CASE("a kernel's output has the same bits whatever order its threads run in", "[cuda][emulation]") {
  // Between barriers the threads of a block may run in any order on a GPU; a
  // kernel whose result depends on it has a race. RMSNorm: a warp shuffle and
  // a shared-memory reduction. (Every kernel test also runs in a shuffled
  // order, as the meson test cuda_kernels_shuffled, against its tolerances.)
  const int rows = 5, dim = 96;
  const auto x = test::random_values(size_t(rows * dim), 3, cuda::DType::Float32, 2.0f);
  const auto w = test::random_values(size_t(dim), 4, cuda::DType::Float32);
  const auto run = [&](uint64_t seed) {
    emu::set_thread_order_seed(seed);
    auto d_x = test::upload(x, cuda::DType::Float32);
    const auto d_w = test::upload(w, cuda::DType::Float32);
    auto d_out = test::nan_filled(size_t(rows * dim), cuda::DType::Float32);
    cuda::launch_residual_rmsnorm(d_x.as<float>(), {}, {d_w.get()}, cuda::DType::Float32, dim, 1e-5f, nullptr, rows,
                                  d_out.get(), nullptr);
    auto out = test::download(d_out, size_t(rows * dim), cuda::DType::Float32);
    emu::set_thread_order_seed(0);
    return out;
  };
  const auto in_order = run(0);
  for (float v : in_order) REQUIRE(std::isfinite(v));
  for (uint64_t seed : {1u, 77u, 12345u}) {
    INFO("thread order seed " << seed);
    const auto shuffled = run(seed);
    CHECK(std::memcmp(shuffled.data(), in_order.data(), in_order.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("emulated device: a kernel writing past the end of a buffer, or into freed memory, is stopped", "[cuda]") {
  const auto write_in_kernel = [](int n, int i, bool free_first) {
    return [=] {
      float* x = nullptr;
      if (cudaMalloc(reinterpret_cast<void**>(&x), size_t(n) * sizeof(float)) != cudaSuccess) _exit(3);
      if (free_first) cudaFree(x);
      ASTRAI_LAUNCH(write_at, 1, 1, 0, nullptr)(x, i);
      cudaDeviceSynchronize();
    };
  };
  // The last element is fine; one past it (the allocation is a multiple of
  // 16 bytes, so no slack) ends the process naming the kernel.
  const auto [ok_status, ok_err] = in_child(write_in_kernel(1024, 1023, false));
  CHECK(WIFEXITED(ok_status));
  CHECK(ok_err.empty());
  const auto [status, err] = in_child(write_in_kernel(1024, 1024, false));
  CHECK(WIFSIGNALED(status));
  CHECK_THAT(err, Contains("out-of-bounds device access") && Contains("0 bytes past the end of the 4096-byte") &&
                      Contains("write_at"));
  const auto [freed_status, freed_err] = in_child(write_in_kernel(1024, 0, true));
  CHECK(WIFSIGNALED(freed_status));
  CHECK_THAT(freed_err, Contains("freed device memory"));
}

TEST_CASE("emulated device: freed memory is handed out again to an allocation it fits", "[cuda]") {
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  REQUIRE(cudaMalloc(&a, 10000) == cudaSuccess);
  REQUIRE(cudaFree(a) == cudaSuccess);
  REQUIRE(cudaMalloc(&b, 6000) == cudaSuccess);  // fits, and wastes less than its size
  CHECK(b == a);
  REQUIRE(cudaMalloc(&c, 6000) == cudaSuccess);
  CHECK(c != a);
  // Reused memory is NaN again, and its end moved with the new size.
  std::vector<float> back(1500);
  REQUIRE(cudaMemcpy(back.data(), b, 6000, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (float v : back) CHECK(std::isnan(v));
  CHECK(cudaFree(b) == cudaSuccess);
  CHECK(cudaFree(c) == cudaSuccess);
}

TEST_CASE("emulated device: a launch into another device's stream fails, as on a GPU", "[cuda]") {
  int devices = 0;
  REQUIRE(cudaGetDeviceCount(&devices) == cudaSuccess);
  REQUIRE(devices == 8);
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  float* x = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x), 64) == cudaSuccess);
  ASTRAI_LAUNCH(write_at, 1, 1, 0, stream)(x, 0);
  CHECK(cudaGetLastError() == cudaErrorInvalidResourceHandle);
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  ASTRAI_LAUNCH(write_at, 1, 1, 0, stream)(x, 0);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
  CHECK(cudaStreamDestroy(stream) == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  CHECK(cudaFree(x) == cudaSuccess);
}
