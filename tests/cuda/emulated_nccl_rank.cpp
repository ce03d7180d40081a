// One rank of a test_emulated_nccl scenario, a process of its own as every
// rank is (cuda/emulation/nccl_emulated.cpp):
//   emulated_nccl_rank SCENARIO RANK NRANKS ID
// ID is ncclUniqueId's text (the test made it). Prints "result <hash>" (a
// hash of the bytes a collective left on this rank's device) and exits 0
// when its checks pass; exits 1 when a result is wrong, 3 when NCCL or the
// device reported a failure (the fault scenarios expect it), 2 for bad use.
// Values: rank r's element i is value(r, i), floats with 24-bit mantissas
// whose sums round, so a sum in another order than rank order differs.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

float value(int rank, size_t i) {
  uint64_t z = (uint64_t(rank) << 40) ^ (i * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
  return float(double(z >> 40) / double(1 << 24) * 2.0 - 1.0) * 3.0f;
}

uint64_t hash_bytes(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ull;
  return h;
}

int failed(const char* what) {
  std::fprintf(stderr, "rank program: %s\n", what);
  return 3;
}

struct Device {
  void* p = nullptr;
  explicit Device(size_t bytes) {
    if (cudaMalloc(&p, bytes) != cudaSuccess) std::abort();
  }
  ~Device() { cudaFree(p); }
};

template <typename T>
void upload(void* device, const std::vector<T>& v) {
  cudaMemcpy(device, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
}

template <typename T>
std::vector<T> download(const void* device, size_t n) {
  std::vector<T> v(n);
  cudaMemcpy(v.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

// The sum every rank must get: rank order, in float32.
std::vector<float> rank_order_sum(int nranks, size_t n) {
  std::vector<float> sum(n);
  for (size_t i = 0; i < n; ++i) {
    float acc = value(0, i);
    for (int r = 1; r < nranks; ++r) acc += value(r, i);
    sum[i] = acc;
  }
  return sum;
}

std::vector<float> rank_values(int rank, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = value(rank, i);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: emulated_nccl_rank SCENARIO RANK NRANKS ID\n");
    return 2;
  }
  const std::string scenario = argv[1];
  const int rank = std::atoi(argv[2]), nranks = std::atoi(argv[3]);
  ncclUniqueId id{};
  std::snprintf(id.internal, sizeof id.internal, "%s", argv[4]);
  if (cudaSetDevice(rank % 8) != cudaSuccess) return failed("cudaSetDevice");
  const int told = scenario == "wrong-nranks" && rank == 1 ? nranks + 1 : nranks;
  if (scenario == "late-join" && rank == 1) sleep(1);  // joins after the others wait (not a timing test: any delay passes)
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, told, id, rank) != ncclSuccess) return failed("ncclCommInitRank");
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);

  // 1.5 M floats: 6 MB, more than one round of the 4 MiB staging area.
  const size_t n = scenario == "allreduce-large" ? 1'500'000 : 1000;
  if (scenario == "allreduce" || scenario == "allreduce-large" || scenario == "late-join") {
    Device buf(n * 4);
    upload(buf.p, rank_values(rank, n));
    if (ncclAllReduce(buf.p, buf.p, n, ncclFloat32, ncclSum, comm, stream) != ncclSuccess) return failed("call");
    if (cudaStreamSynchronize(stream) != cudaSuccess) return failed("synchronize");
    const auto got = download<float>(buf.p, n);
    if (std::memcmp(got.data(), rank_order_sum(nranks, n).data(), n * 4) != 0) return 1;
    std::printf("result %llu\n", static_cast<unsigned long long>(hash_bytes(got.data(), n * 4)));
  } else if (scenario == "broadcast") {
    const int root = nranks - 1;
    Device send(n * 4), recv(n * 4);
    upload(send.p, rank_values(rank, n));
    if (ncclBroadcast(send.p, recv.p, n, ncclFloat32, root, comm, stream) != ncclSuccess) return failed("call");
    if (cudaStreamSynchronize(stream) != cudaSuccess) return failed("synchronize");
    const auto got = download<float>(recv.p, n);
    if (std::memcmp(got.data(), rank_values(root, n).data(), n * 4) != 0) return 1;
    std::printf("result %llu\n", static_cast<unsigned long long>(hash_bytes(got.data(), n * 4)));
  } else if (scenario == "allgather") {
    Device recv(n * 4 * size_t(nranks));
    // In place: this rank's part of recv is its send buffer.
    void* mine = static_cast<char*>(recv.p) + size_t(rank) * n * 4;
    upload(mine, rank_values(rank, n));
    if (ncclAllGather(mine, recv.p, n, ncclFloat32, comm, stream) != ncclSuccess) return failed("call");
    if (cudaStreamSynchronize(stream) != cudaSuccess) return failed("synchronize");
    const auto got = download<float>(recv.p, n * size_t(nranks));
    for (int r = 0; r < nranks; ++r)
      if (std::memcmp(got.data() + size_t(r) * n, rank_values(r, n).data(), n * 4) != 0) return 1;
    std::printf("result %llu\n", static_cast<unsigned long long>(hash_bytes(got.data(), got.size() * 4)));
  } else if (scenario == "graph") {
    // An all-reduce captured once and replayed three times: each replay is a
    // new collective. Small integers sum exactly: 1 -> nranks^3.
    Device buf(n * 4);
    upload(buf.p, std::vector<float>(n, 1.0f));
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (ncclAllReduce(buf.p, buf.p, n, ncclFloat32, ncclSum, comm, stream) != ncclSuccess) return failed("call");
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream, &graph) != cudaSuccess) return failed("capture");
    cudaGraphExec_t exec = nullptr;
    cudaGraphInstantiate(&exec, graph, 0);
    for (int i = 0; i < 3; ++i) cudaGraphLaunch(exec, stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess) return failed("synchronize");
    const auto got = download<float>(buf.p, n);
    for (const float v : got)
      if (v != float(nranks * nranks * nranks)) return 1;
    std::printf("result %llu\n", static_cast<unsigned long long>(hash_bytes(got.data(), n * 4)));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  } else if (scenario == "count-mismatch" || scenario == "type-mismatch" || scenario == "kind-mismatch") {
    Device buf(2 * n * 8);
    const size_t count = scenario == "count-mismatch" && rank == 1 ? n + 1 : n;
    const ncclDataType_t type = scenario == "type-mismatch" && rank == 1 ? ncclInt32 : ncclFloat32;
    const ncclResult_t r = scenario == "kind-mismatch" && rank == 1
                               ? ncclBroadcast(buf.p, buf.p, count, type, 0, comm, stream)
                               : ncclAllReduce(buf.p, buf.p, count, type, ncclSum, comm, stream);
    if (r != ncclSuccess) return failed("call");
    if (cudaStreamSynchronize(stream) != cudaSuccess) return failed("synchronize");
  } else if (scenario == "peer-exits" || scenario == "peer-sleeps") {
    if (rank == 1) {
      if (scenario == "peer-exits") _exit(0);  // without its collective
      while (true) pause();                     // never arrives; the test kills it
    }
    Device buf(n * 4);
    if (ncclAllReduce(buf.p, buf.p, n, ncclFloat32, ncclSum, comm, stream) != ncclSuccess) return failed("call");
    if (cudaStreamSynchronize(stream) != cudaSuccess) return failed("synchronize");
  } else if (scenario == "foreign-buffer") {
    // Rank 1 is handed rank 0's device pointer (through a file) and has made
    // no allocation of its own: in its process that address is nothing.
    const char* file = std::getenv("ASTRAI_NCCL_POINTER_FILE");
    if (file == nullptr) return 2;
    if (rank == 0) {
      Device buf(n * 4);
      if (FILE* f = std::fopen(file, "w")) {
        std::fprintf(f, "%p\n", buf.p);
        std::fclose(f);
      }
      if (ncclAllReduce(buf.p, buf.p, n, ncclFloat32, ncclSum, comm, stream) != ncclSuccess) return failed("call");
      if (cudaStreamSynchronize(stream) != cudaSuccess) return failed("synchronize");
    } else {
      void* theirs = nullptr;
      for (int i = 0; i < 10000 && theirs == nullptr; ++i) {
        if (FILE* f = std::fopen(file, "r")) {
          if (std::fscanf(f, "%p", &theirs) != 1) theirs = nullptr;
          std::fclose(f);
        }
        if (theirs == nullptr) usleep(1000);
      }
      if (ncclAllReduce(theirs, theirs, n, ncclFloat32, ncclSum, comm, stream) != ncclSuccess) return failed("call");
      return 0;  // a GPU would have faulted later; here the call refuses it
    }
  } else if (scenario == "host-buffer") {
    std::vector<float> host(n);
    if (ncclAllReduce(host.data(), host.data(), n, ncclFloat32, ncclSum, comm, stream) != ncclSuccess)
      return failed("call");
  } else if (scenario == "abort") {
    Device buf(n * 4);
    if (rank == 1) {
      ncclCommAbort(comm);
      return 0;
    }
    if (ncclAllReduce(buf.p, buf.p, n, ncclFloat32, ncclSum, comm, stream) != ncclSuccess) return failed("call");
    if (cudaStreamSynchronize(stream) != cudaSuccess) return failed("synchronize");
  } else {
    std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    return 2;
  }
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  return 0;
}
