// A tensor-parallel rank other than 0 (see rank_worker.h).
#include "cuda/tensor_parallel/rank_worker.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include "cuda/cuda_check.h"
#include "cuda/cuda_executor.h"
#include "cuda/device_page_cache.h"
#include "cuda/tensor_parallel/communicator.h"
#include "cuda/tensor_parallel/rank_messages.h"
#include "engine/distributed/frame_socket.h"
#include "engine/distributed/rank_group.h"
#include "engine/distributed/tensor_parallel_shard.h"

namespace astrai::cuda {
namespace {

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// Ends the process when rank 0's connection closes while this rank is busy
// (loading, joining the communicator, running a step): it may be waiting in
// NCCL for a rank 0 that will never come. While the rank waits for a
// message, the closed connection reaches it as the end of the stream.
class Rank0Watch {
 public:
  Rank0Watch(const FrameSocket& socket, int rank) : socket_(socket), rank_(rank), thread_([this] { loop(); }) {}
  ~Rank0Watch() {
    stop_ = true;
    thread_.join();
  }
  std::atomic<bool> busy{true};

 private:
  void loop() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (busy && socket_.peer_closed()) {
        std::cerr << "astrai rank " << rank_ << ": rank 0 went away; exiting" << std::endl;
        std::_Exit(1);
      }
    }
  }
  const FrameSocket& socket_;
  int rank_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The steps loop, once the shard is loaded; returns on Shutdown (0) or when rank 0 goes (1).
int serve_steps(FrameSocket& socket, CudaExecutor& executor, Rank0Watch& watch, int rank) {
  std::map<int, std::unique_ptr<DevicePageCache>> caches;
  const ModelConfig& c = executor.config();
  while (true) {
    watch.busy = false;
    const std::optional<std::string> frame = socket.receive();
    if (!frame) {
      std::cerr << "astrai rank " << rank << ": rank 0 closed its connection; exiting" << std::endl;
      return 1;
    }
    const tp::Kind kind = tp::kind_of(*frame);
    // Busy only with work that may wait on rank 0 in NCCL: a Shutdown may
    // arrive with rank 0's end of the connection already closed behind it.
    watch.busy = kind == tp::Kind::Step;
    switch (kind) {
      case tp::Kind::CreateCache: {
        const tp::CreateCache m = tp::decode_create_cache(*frame);
        caches[m.id] = std::make_unique<DevicePageCache>(c, m.n_pages, m.page_size, executor.dtype());
        break;
      }
      case tp::Kind::DropCache:
        caches.erase(tp::decode_drop_cache(*frame).id);
        break;
      case tp::Kind::Step: {
        const tp::Step m = tp::decode_step(*frame);
        const auto it = caches.find(m.cache);
        if (it == caches.end()) throw std::runtime_error("a step on cache " + std::to_string(m.cache) + ", never made");
        DevicePageCache& cache = *it->second;
        if (m.copies.size() % 2 != 0) throw std::runtime_error("a step's page copies are not pairs");
        for (size_t i = 0; i < m.copies.size(); i += 2) {
          if (m.copies[i] < 0 || m.copies[i] >= cache.n_pages() || m.copies[i + 1] < 0 ||
              m.copies[i + 1] >= cache.n_pages())
            throw std::runtime_error("a page copy outside the cache");
          cache.copy_page_rows(m.copies[i], m.copies[i + 1]);
        }
        tp::check_rank_plan(m.plan, cache.n_pages(), cache.page_size(), DevicePageCache::kPaddingSlots, c.vocab_size);
        executor.run_rank_step(m.plan, m.padded, cache);
        break;
      }
      case tp::Kind::Shutdown:
        return 0;
      default:
        throw std::runtime_error("an unexpected message from rank 0");
    }
  }
}

}  // namespace

int run_rank(const ModelSource& full, const TensorParallelOptions& tp) {
  const TensorParallelLaunch& l = tp.launch;
  const std::string who = "astrai rank " + std::to_string(l.rank);
  if (l.rank < 1 || l.rank >= l.world) {
    std::cerr << who << ": not a rank other than 0 of " << l.world << std::endl;
    return 1;
  }
  // The first process of another node than rank 0's starts its node's other ranks.
  std::map<int, ChildProcess> children = start_node_ranks(l, tp.rank_command, l.master_addr, l.master_port);
  std::optional<FrameSocket> socket;
  try {
    check_tensor_parallel(full.config, {l.rank, l.world});
    socket = FrameSocket::connect(l.master_addr, l.master_port, tp.startup_timeout_s);
    socket->send(tp::encode(tp::Hello{l.rank, l.world, int(getpid()), host_name(),
                                      full.config.describe() + (full.tied ? ", classifier tied" : "")}));
    Rank0Watch watch(*socket, l.rank);
    watch.busy = false;
    const std::optional<std::string> frame = socket->receive();
    watch.busy = true;
    if (!frame) throw std::runtime_error("rank 0 closed its connection before the setup (it refused this rank)");
    const tp::Setup setup = tp::decode_setup(*frame);
    CudaOptions options;
    options.dtype = DType(setup.dtype);
    options.device = l.local_rank;
    options.cuda_graphs = setup.cuda_graphs;
    options.batch_invariant = setup.batch_invariant;
    options.poison_scratch = setup.poison_scratch;
    ASTRAI_CUDA_CHECK(cudaSetDevice(options.device));
    Communicator comm(setup.nccl_id, l.rank, l.world);
    CudaExecutor executor(shard_model_source(full, {l.rank, l.world}), options, RankRole{&comm, nullptr, false});
    size_t free_bytes = 0, total_bytes = 0;
    ASTRAI_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    socket->send(tp::encode(tp::Ready{executor.weights_bytes(), free_bytes}));
    const int status = serve_steps(*socket, executor, watch, l.rank);
    for (auto& [rank, child] : children) child.wait();
    return status;
  } catch (const std::exception& e) {
    std::cerr << who << ": " << e.what() << std::endl;
    if (socket) {
      try {
        socket->send(tp::encode(tp::Failed{"rank " + std::to_string(l.rank) + ": " + e.what()}));
      } catch (const std::exception&) {
      }
    }
    return 1;
  }
}

}  // namespace astrai::cuda
