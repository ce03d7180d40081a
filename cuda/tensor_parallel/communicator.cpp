#include "cuda/tensor_parallel/communicator.h"

#include <cstring>
#include <stdexcept>

#ifdef ASTRAI_HAVE_NCCL
#include <nccl.h>
#endif

namespace astrai::cuda {

#ifdef ASTRAI_HAVE_NCCL
namespace {

void check(ncclResult_t r, const char* call, ncclComm_t comm) {
  if (r == ncclSuccess) return;
  const char* last = comm != nullptr ? ncclGetLastError(comm) : ncclGetLastError(nullptr);
  throw std::runtime_error(std::string("NCCL error in ") + call + ": " + ncclGetErrorString(r) +
                           (last != nullptr && *last != '\0' ? std::string(" (") + last + ")" : std::string()));
}

}  // namespace

std::string Communicator::make_id() {
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr);
  return std::string(id.internal, sizeof id.internal);
}

Communicator::Communicator(const std::string& id, int rank, int world) : rank_(rank), world_(world) {
  ncclUniqueId nccl_id{};
  if (id.size() != sizeof nccl_id.internal)
    throw std::invalid_argument("Communicator: an id of " + std::to_string(id.size()) + " bytes, not " +
                                std::to_string(sizeof nccl_id.internal));
  std::memcpy(nccl_id.internal, id.data(), id.size());
  check(ncclCommInitRank(&comm_, world, nccl_id, rank), "ncclCommInitRank", nullptr);
}

Communicator::~Communicator() {
  if (comm_ != nullptr) ncclCommDestroy(comm_);
}

void Communicator::all_reduce_sum(float* data, size_t count, cudaStream_t stream) {
  check(ncclAllReduce(data, data, count, ncclFloat32, ncclSum, comm_, stream), "ncclAllReduce", comm_);
}

void Communicator::abort() {
  if (comm_ == nullptr) return;
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

#else  // a CUDA build without NCCL (no libnccl beside the toolkit)

std::string Communicator::make_id() { throw std::runtime_error("tensor parallel: this build has no NCCL"); }
Communicator::Communicator(const std::string&, int rank, int world) : rank_(rank), world_(world) {
  throw std::runtime_error("tensor parallel: this build has no NCCL (meson found no libnccl when it was configured)");
}
Communicator::~Communicator() = default;
void Communicator::all_reduce_sum(float*, size_t, cudaStream_t) {}
void Communicator::abort() {}

#endif

}  // namespace astrai::cuda
