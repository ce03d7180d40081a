// Who a process is in a tensor-parallel group (tensor_parallel_launch.h), from
// its options and the variables each launcher documents: Open MPI's
// OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}, Slurm's SLURM_{PROCID,
// NTASKS,LOCALID,NNODES}, LeaderWorkerSet's LWS_{WORKER_INDEX,GROUP_SIZE,
// LEADER_ADDRESS}, PyTorch's MASTER_{ADDR,PORT}. And the frame sockets the
// ranks talk over (frame_socket.h).
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "engine/distributed/frame_socket.h"
#include "engine/distributed/tensor_parallel_launch.h"

namespace astrai {
namespace {

TensorParallelLaunch resolve(TensorParallelLaunch l, std::map<std::string, std::string> env) {
  return resolve_tensor_parallel_launch(l, [env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TensorParallelLaunch world(int n, int nnodes = 1, int node_rank = 0) {
  TensorParallelLaunch l;
  l.world = n;
  l.nnodes = nnodes;
  l.node_rank = node_rank;
  return l;
}

}  // namespace

TEST_CASE("tensor parallel launch: one machine, rank 0 starts the others on a free loopback port", "[tensor_parallel]") {
  const auto l = resolve(world(4), {});
  CHECK(l.rank == 0);
  CHECK(l.local_rank == 0);
  CHECK_FALSE(l.launched_externally);
  CHECK(l.started_ranks() == 3);
  CHECK(l.master_addr == "127.0.0.1");
  CHECK(l.master_port == 0);
}

TEST_CASE("tensor parallel launch: several machines, each node's first rank starts its others", "[tensor_parallel]") {
  TensorParallelLaunch o = world(8, 2, 1);
  o.master_addr = "10.0.0.1";
  const auto l = resolve(o, {});
  CHECK(l.rank == 4);
  CHECK(l.started_ranks() == 3);
  CHECK(l.first_started_rank() == 5);
  CHECK(l.master_port == 29500);
  CHECK_THROWS_WITH(resolve(world(8, 2, 1), {}), Catch::Contains("needs --master-addr"));
  CHECK_THROWS_WITH(resolve(world(8, 3), {}), Catch::Contains("3 nodes do not divide 8 ranks"));
  CHECK_THROWS_WITH(resolve(world(8, 2, 2), {}), Catch::Contains("node rank 2 of 2 nodes"));
  const auto m = resolve(world(8, 2, 1), {{"MASTER_ADDR", "head"}, {"MASTER_PORT", "1234"}});
  CHECK(m.master_addr == "head");
  CHECK(m.master_port == 1234);
}

TEST_CASE("tensor parallel launch: mpirun and srun start every rank", "[tensor_parallel]") {
  const auto mpi = resolve(world(4), {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                      {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                      {"MASTER_ADDR", "n0"}});
  CHECK(mpi.launched_externally);
  CHECK(mpi.rank == 3);
  CHECK(mpi.local_rank == 1);
  CHECK(mpi.started_ranks() == 0);
  CHECK(mpi.master_addr == "n0");
  CHECK(mpi.master_port == 29500);
  // Every rank on this machine: loopback will do.
  const auto local = resolve(world(2), {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  CHECK(local.master_addr == "127.0.0.1");
  CHECK_THROWS_WITH(resolve(world(4), {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
                    Catch::Contains("mpirun started 2 processes for --tensor-parallel 4"));
  const auto slurm = resolve(world(2), {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "1"},
                                        {"SLURM_NNODES", "1"}});
  CHECK(slurm.launched_externally);
  CHECK(slurm.rank == 1);
  CHECK(slurm.local_rank == 1);
  // One Slurm task (srun astrai serve --tensor-parallel 2): the process starts its ranks itself.
  const auto one_task = resolve(world(2), {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  CHECK_FALSE(one_task.launched_externally);
  CHECK(one_task.started_ranks() == 1);
}

TEST_CASE("tensor parallel launch: a LeaderWorkerSet pod is a node", "[tensor_parallel]") {
  const auto l = resolve(world(16), {{"LWS_WORKER_INDEX", "1"}, {"LWS_GROUP_SIZE", "2"},
                                     {"LWS_LEADER_ADDRESS", "leader.svc"}});
  CHECK(l.nnodes == 2);
  CHECK(l.node_rank == 1);
  CHECK(l.rank == 8);
  CHECK(l.master_addr == "leader.svc");
  CHECK(l.started_ranks() == 7);
  CHECK_THROWS_WITH(resolve(world(2), {{"OMPI_COMM_WORLD_RANK", "x"}}), Catch::Contains("is not a count"));
}

TEST_CASE("frame sockets carry whole frames and say when the peer is gone", "[tensor_parallel]") {
  FrameListener listener("127.0.0.1", 0);
  REQUIRE(listener.port() > 0);
  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = char(i * 7919 % 251);
  std::thread peer([&] {
    FrameSocket s = FrameSocket::connect("127.0.0.1", listener.port(), 10);
    s.send("hello");
    s.send("");
    s.send(big);
    const auto back = s.receive();
    s.send(back.value_or("none"));
  });
  std::optional<FrameSocket> s = listener.accept(10000);
  REQUIRE(s);
  CHECK(s->receive() == "hello");
  CHECK(s->receive() == "");
  CHECK(s->receive() == big);
  s->send("echo");
  CHECK(s->receive() == "echo");
  peer.join();
  CHECK(s->receive() == std::nullopt);  // closed between frames
  CHECK(s->peer_closed());
}

TEST_CASE("frame sockets refuse a cut frame and a length over the limit", "[tensor_parallel]") {
  FrameListener listener("127.0.0.1", 0);
  for (const std::string raw : {std::string("\x00\x00\x00\x10" "abc", 7), std::string("\x7f\xff\xff\xff", 4),
                                std::string("\x00\x00", 2)}) {
    std::thread peer([&] {
      FrameSocket s = FrameSocket::connect("127.0.0.1", listener.port(), 10);
      CHECK(::send(s.fd(), raw.data(), raw.size(), 0) == ssize_t(raw.size()));
    });
    std::optional<FrameSocket> s = listener.accept(10000);
    REQUIRE(s);
    peer.join();
    CHECK_THROWS_AS(s->receive(), std::runtime_error);
  }
  CHECK_THROWS_WITH(FrameSocket::connect("127.0.0.1", 1, 0.2), Catch::Contains("cannot connect to 127.0.0.1:1"));
}

}  // namespace astrai
