#include "cli/tensor_parallel_args.h"

#include <unistd.h>

#include <climits>
#include <iostream>
#include <stdexcept>

#include "engine/model_files/load_model.h"

#ifdef ASTRAI_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace astrai::cli {
namespace {

std::string self_executable() {
  char path[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program's path (/proc/self/exe) to start its ranks");
  return std::string(path, size_t(n));
}

int checked_int(const Arguments& args, const std::string& name, int low, int high) {
  const long long v = args.get_int(name);
  if (v < low || v > high)
    throw std::invalid_argument(name + " must be in [" + std::to_string(low) + ", " + std::to_string(high) + "]");
  return int(v);
}

// The argument vector that starts one rank of this node (rank arguments appended by the group).
std::vector<std::string> rank_command(const std::string& model_path, const std::string& tokenizer_path,
                                      const TensorParallelLaunch& l) {
  std::vector<std::string> argv = {self_executable(), "rank-worker", "--model", model_path};
  if (!tokenizer_path.empty()) argv.insert(argv.end(), {"--tokenizer", tokenizer_path});
  argv.insert(argv.end(), {"--tensor-parallel", std::to_string(l.world), "--nnodes", std::to_string(l.nnodes)});
  return argv;
}

int run_rank(const TensorParallelOptions& tp, const std::string& model_path, const std::string& tokenizer_path) {
#ifdef ASTRAI_HAVE_CUDA
  OpenedModel model = open_model(model_path, tokenizer_path);
  return run_tensor_parallel_rank(model.weights, tp);
#else
  (void)tp, (void)model_path, (void)tokenizer_path;
  std::cerr << "astrai: tensor parallelism needs the CUDA backend, which this build does not have\n";
  return 2;
#endif
}

}  // namespace

void add_tensor_parallel_options(Arguments& args) {
  args.option("--tensor-parallel", "GPUs (ranks) the model is divided over, one process each (docs/tensor-parallel.md)",
              "1")
      .option("--nnodes", "machines the ranks are on (each starts its own ranks)", "1")
      .option("--node-rank", "which of those machines this is (0 serves)", "0")
      .option("--master-addr", "rank 0's host, which the other ranks connect to (default 127.0.0.1 on one machine)")
      .option("--master-port", "rank 0's port for the other ranks (default: a free one on one machine, else 29500)");
}

TensorParallelOptions tensor_parallel_options(const Arguments& args, const std::string& model_path,
                                              const std::string& tokenizer_path) {
  TensorParallelLaunch l;
  l.world = checked_int(args, "--tensor-parallel", 1, 64);
  l.nnodes = checked_int(args, "--nnodes", 1, 64);
  l.node_rank = checked_int(args, "--node-rank", 0, 63);
  l.master_addr = args.get("--master-addr");
  if (args.has("--master-port")) l.master_port = checked_int(args, "--master-port", 1, 65535);
  TensorParallelOptions tp;
  tp.launch = resolve_tensor_parallel_launch(l);
  if (tp.launch.world > 1) tp.rank_command = rank_command(model_path, tokenizer_path, tp.launch);
  return tp;
}

std::optional<int> run_rank_unless_first(const TensorParallelOptions& tp, const std::string& model_path,
                                         const std::string& tokenizer_path) {
  if (tp.launch.world == 1 || tp.launch.rank == 0) return std::nullopt;
  return run_rank(tp, model_path, tokenizer_path);
}

int run_rank_worker(std::span<const std::string_view> argv) {
  Arguments args("astrai rank-worker --model M --tensor-parallel N --rank R --local-rank L --master-addr A "
                 "--master-port P (started by astrai serve or generate; docs/tensor-parallel.md)");
  args.option("--model", "the model rank 0 serves (its own copy on this machine)")
      .option("--tokenizer", "a llama2.c tokenizer, as rank 0 was given")
      .option("--tensor-parallel", "ranks in all")
      .option("--nnodes", "machines", "1")
      .option("--rank", "this rank")
      .option("--local-rank", "this rank's GPU on this machine")
      .option("--master-addr", "rank 0's host")
      .option("--master-port", "rank 0's port");
  if (int status = args.parse(argv); status >= 0) return status;
  TensorParallelOptions tp;
  try {
    for (const char* required : {"--model", "--tensor-parallel", "--rank", "--local-rank", "--master-addr", "--master-port"})
      if (!args.has(required)) throw std::invalid_argument(std::string(required) + " is required");
    TensorParallelLaunch& l = tp.launch;
    l.world = checked_int(args, "--tensor-parallel", 2, 64);
    l.nnodes = checked_int(args, "--nnodes", 1, 64);
    l.rank = checked_int(args, "--rank", 1, l.world - 1);
    l.local_rank = checked_int(args, "--local-rank", 0, 63);
    l.node_rank = l.rank / l.ranks_per_node();
    l.master_addr = args.get("--master-addr");
    l.master_port = checked_int(args, "--master-port", 1, 65535);
    l.launched_externally = true;  // started for this rank alone: it starts no other
  } catch (const std::exception& e) {
    std::cerr << "astrai rank-worker: " << e.what() << "\n" << args.usage();
    return 2;
  }
  return run_reporting_errors("rank-worker", [&] { return run_rank(tp, args.get("--model"), args.get("--tokenizer")); });
}

}  // namespace astrai::cli
