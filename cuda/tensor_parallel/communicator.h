// The collectives a tensor-parallel rank needs, over NCCL (the emulated
// build links cuda/emulation/nccl_emulated.cpp instead, as it does cudart):
// one communicator per process, one rank per GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "cuda/all_reduce.h"

struct ncclComm;

namespace astrai::cuda {

class Communicator final : public AllReduce {
 public:
  // ncclGetUniqueId's 128 bytes: made by rank 0, sent to the others.
  static std::string make_id();
  // Joins the group `id` as `rank` of `world` on the current device; blocks
  // until every rank has joined. Throws std::runtime_error naming NCCL's
  // reason (and in a build without NCCL, saying so).
  Communicator(const std::string& id, int rank, int world);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world() const { return world_; }
  void all_reduce_sum(float* data, size_t count, cudaStream_t stream) override;
  // Fails every collective in flight on every rank (ncclCommAbort): after a
  // peer died, so that no rank waits for it forever. The communicator is
  // unusable afterwards.
  void abort();

 private:
  ncclComm* comm_ = nullptr;
  int rank_ = 0, world_ = 1;
};

}  // namespace astrai::cuda
