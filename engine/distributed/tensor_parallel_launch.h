// Who this process is in a tensor-parallel group, from the command line and
// the environment a launcher leaves (docs/tensor-parallel.md):
//
//   astrai serve --tensor-parallel N         one node: rank 0 serves and
//                                            starts ranks 1..N-1 itself
//   ... --nnodes M --node-rank K --master-addr HOST [--master-port P]
//                                            node K starts its N/M ranks;
//                                            node 0's first is rank 0
//   mpirun -np N astrai serve --tensor-parallel N --master-addr HOST
//   srun --ntasks N astrai serve ...         every rank a process the
//                                            launcher started: rank and
//                                            device from OMPI_COMM_WORLD_RANK /
//                                            _LOCAL_RANK or SLURM_PROCID / _LOCALID
//   a Kubernetes LeaderWorkerSet             one pod a node: LWS_WORKER_INDEX is
//                                            the node, LWS_GROUP_SIZE the nodes,
//                                            LWS_LEADER_ADDRESS rank 0's host
//
// MASTER_ADDR and MASTER_PORT (PyTorch's names) stand in for the options
// when these are not given.
#pragma once

#include <functional>
#include <string>

namespace astrai {

struct TensorParallelLaunch {
  int world = 1;  // ranks in all, --tensor-parallel
  int nnodes = 1, node_rank = 0;
  std::string master_addr;  // rank 0's host; "" = 127.0.0.1 on one node
  int master_port = -1;     // -1: a free port on one node (told to the ranks rank 0 starts), else 29500
  // Resolved:
  int rank = 0;        // global rank; 0 serves
  int local_rank = 0;  // the device on this node
  bool launched_externally = false;  // a launcher started every rank: start none
  int ranks_per_node() const { return world / nnodes; }
  // The ranks this process starts (its node's others), when it starts any.
  int first_started_rank() const { return rank + 1; }
  int started_ranks() const { return launched_externally ? 0 : ranks_per_node() - 1; }
};

using GetEnv = std::function<const char*(const char* name)>;

// `options` as the command line gave them, resolved against the
// environment (getenv by default). Throws std::invalid_argument naming the
// inconsistency: world < 1, nodes that do not divide the ranks, a node rank
// out of range, a launcher that started another number of processes than
// --tensor-parallel, several nodes without --master-addr.
TensorParallelLaunch resolve_tensor_parallel_launch(TensorParallelLaunch options, const GetEnv& getenv = nullptr);

}  // namespace astrai
