#include "engine/distributed/tensor_parallel_launch.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace astrai {
namespace {

constexpr int kDefaultMasterPort = 29500;  // PyTorch's, vLLM's default too

// An integer variable, or `fallback` when unset; throws when it is not one.
int env_int(const GetEnv& getenv, const char* name, int fallback) {
  const char* text = getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < 0 || v > 1'000'000)
    throw std::invalid_argument(std::string("tensor parallel: ") + name + "='" + text + "' is not a count");
  return int(v);
}

bool has(const GetEnv& getenv, const char* name) {
  const char* text = getenv(name);
  return text != nullptr && *text != '\0';
}

}  // namespace

TensorParallelLaunch resolve_tensor_parallel_launch(TensorParallelLaunch l, const GetEnv& env_or_null) {
  const GetEnv getenv = env_or_null ? env_or_null : [](const char* name) { return std::getenv(name); };
  if (l.world < 1) throw std::invalid_argument("--tensor-parallel must be at least 1");
  // A Kubernetes LeaderWorkerSet: a pod per node.
  if (has(getenv, "LWS_WORKER_INDEX")) {
    l.node_rank = env_int(getenv, "LWS_WORKER_INDEX", l.node_rank);
    l.nnodes = env_int(getenv, "LWS_GROUP_SIZE", l.nnodes);
    if (l.master_addr.empty() && has(getenv, "LWS_LEADER_ADDRESS")) l.master_addr = getenv("LWS_LEADER_ADDRESS");
  }
  if (l.master_addr.empty() && has(getenv, "MASTER_ADDR")) l.master_addr = getenv("MASTER_ADDR");
  if (l.master_port < 0 && has(getenv, "MASTER_PORT")) l.master_port = env_int(getenv, "MASTER_PORT", -1);
  if (l.nnodes < 1 || l.world % l.nnodes != 0)
    throw std::invalid_argument("tensor parallel: " + std::to_string(l.nnodes) + " nodes do not divide " +
                                std::to_string(l.world) + " ranks");
  if (l.node_rank < 0 || l.node_rank >= l.nnodes)
    throw std::invalid_argument("tensor parallel: node rank " + std::to_string(l.node_rank) + " of " +
                                std::to_string(l.nnodes) + " nodes");
  // A launcher that starts every rank (mpirun, srun with one task per rank).
  const char* rank_var = has(getenv, "OMPI_COMM_WORLD_RANK") ? "OMPI_COMM_WORLD_RANK"
                         : has(getenv, "SLURM_PROCID") && env_int(getenv, "SLURM_NTASKS", 1) > 1 ? "SLURM_PROCID"
                                                                                                 : nullptr;
  if (rank_var != nullptr) {
    const bool mpi = std::string(rank_var) == "OMPI_COMM_WORLD_RANK";
    const int size = env_int(getenv, mpi ? "OMPI_COMM_WORLD_SIZE" : "SLURM_NTASKS", l.world);
    if (size != l.world)
      throw std::invalid_argument(std::string("tensor parallel: ") + (mpi ? "mpirun" : "srun") + " started " +
                                  std::to_string(size) + " processes for --tensor-parallel " + std::to_string(l.world) +
                                  " (one process per rank)");
    l.launched_externally = true;
    l.rank = env_int(getenv, rank_var, 0);
    l.local_rank = env_int(getenv, mpi ? "OMPI_COMM_WORLD_LOCAL_RANK" : "SLURM_LOCALID", l.rank % l.ranks_per_node());
    if (l.rank >= l.world)
      throw std::invalid_argument("tensor parallel: rank " + std::to_string(l.rank) + " of " + std::to_string(l.world));
    // The launcher knows whether every rank is on this node.
    const bool all_here = mpi ? env_int(getenv, "OMPI_COMM_WORLD_LOCAL_SIZE", 0) == l.world
                              : env_int(getenv, "SLURM_NNODES", 0) == 1;
    if (all_here && l.master_addr.empty()) l.master_addr = "127.0.0.1";
  } else {
    l.rank = l.node_rank * l.ranks_per_node();
    l.local_rank = 0;
  }
  const bool one_node = l.nnodes == 1 && !l.launched_externally;
  if (l.master_addr.empty()) {
    if (!one_node && l.world > 1)
      throw std::invalid_argument("tensor parallel across processes a launcher started, or several nodes, needs "
                                  "--master-addr (rank 0's host)");
    l.master_addr = "127.0.0.1";
  }
  if (l.master_port < 0) l.master_port = one_node ? 0 : kDefaultMasterPort;
  return l;
}

}  // namespace astrai
