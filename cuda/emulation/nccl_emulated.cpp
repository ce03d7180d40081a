// The NCCL functions AstrAI calls, for the emulated build (-Dcuda=emulated),
// which links this file instead of libnccl, as it links cudart_emulated.cpp
// instead of libcudart. Host code includes the real <nccl.h>.
//
// One rank per process, as AstrAI runs tensor parallelism on GPUs (docs/
// tensor-parallel.md): each rank's emulated device memory is its process's
// own, so no rank can read another's buffers, and the ranks meet in a POSIX
// shared-memory segment named by the ncclUniqueId (/dev/shm/astrai-nccl-*,
// unlinked once every rank has joined).
//
// Semantics:
//  - A collective is queued on its stream like a kernel (a graph capture
//    records it; each replay is a new collective) and runs when the stream
//    is synchronised: it waits there for every rank's same collective.
//  - ncclAllReduce sums in rank order, ((r0 + r1) + r2) + ..., and every rank
//    computes that same sum: the ranks' results are equal bit for bit (real
//    NCCL's ring or tree order differs, but is equal on every rank too).
//    Sum only; float32, float64, int32, int64 (the others: ncclInvalidArgument).
//  - ncclBroadcast and ncclAllGather copy bytes of any type.
//  - Data moves through a staging area of kStagingBytes per rank, in rounds.
//  - Faults (a KernelFault of the stream: the synchronising call fails, and
//    every later one, as after a GPU fault), each naming the ranks: the
//    ranks' n-th collectives differ (kind, count, type, operation, root); a
//    rank's process exits (or dies) while another waits for it; a rank never
//    arrives within ASTRAI_EMULATED_NCCL_TIMEOUT_S seconds (default 600);
//    two processes claim one rank; a rank is told another rank count; a
//    rank aborts (ncclCommAbort). A fault on one rank fails the others that
//    wait on the communicator, with the same message.
//  - Calls check what a GPU would fault on later: buffers that are not device
//    memory of this process (another rank's pointer is not), and a stream of
//    another device than the communicator's (ncclInvalidUsage).
#include <nccl.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda/emulation/block_runner.h"
#include "cuda/emulation/host_work.h"

namespace astrai::emu::nccl {
namespace {

constexpr char kIdPrefix[] = "astrai-emulated-nccl:";
constexpr int kMaxRanks = 64;
constexpr size_t kStagingBytes = size_t(4) << 20;  // per rank
constexpr uint64_t kReady = 0x4153545241494e43ull;

enum class Kind : int32_t { AllReduce = 1, Broadcast = 2, AllGather = 3 };

// What every rank's n-th collective must agree on.
struct Collective {
  uint64_t index = 0;  // 1, 2, ... per communicator
  int32_t kind = 0, dtype = 0, redop = 0, root = 0;
  uint64_t count = 0;  // elements per rank (sendcount for all-gather)
  bool operator==(const Collective&) const = default;
};

struct RankSlot {
  int32_t pid = 0;
  int32_t joined = 0;
  Collective op;
  uint64_t arrived = 0;  // rounds whose data this rank has staged
  uint64_t done = 0;     // rounds whose staging this rank has read
};

// The shared segment; each rank's staging area follows it.
struct Segment {
  std::atomic<uint64_t> ready;
  int32_t nranks;
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int32_t failed;
  char failure[2048];
  RankSlot ranks[kMaxRanks];

  unsigned char* staging(int rank) {
    return reinterpret_cast<unsigned char*>(this) + staging_offset() + size_t(rank) * kStagingBytes;
  }
  static size_t staging_offset() { return (sizeof(Segment) + 4095) / 4096 * 4096; }
  static size_t bytes(int nranks) { return staging_offset() + size_t(nranks) * kStagingBytes; }
};

}  // namespace
}  // namespace astrai::emu::nccl

struct ncclComm {
  astrai::emu::nccl::Segment* segment = nullptr;
  size_t mapped = 0;
  int rank = 0, nranks = 0, device = 0;
  uint64_t next_collective = 0;
  uint64_t round = 0;
  ncclResult_t async_error = ncclSuccess;
  std::string last_error;
};

namespace astrai::emu::nccl {
namespace {

thread_local std::string t_nccl_last_error;

ncclResult_t error(ncclComm* comm, ncclResult_t result, const std::string& message) {
  const std::string text = "emulated NCCL: " + message;
  std::fprintf(stderr, "%s\n", text.c_str());
  t_nccl_last_error = text;
  if (comm) comm->last_error = text;
  return result;
}

double timeout_seconds() {
  const char* text = std::getenv("ASTRAI_EMULATED_NCCL_TIMEOUT_S");
  if (text == nullptr || *text == '\0') return 600.0;
  return std::max(0.001, std::atof(text));
}

// A process that has exited (a zombie not yet reaped counts as exited).
bool process_alive(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no procfs: trust kill()
  const size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

const char* kind_name(int32_t kind) {
  switch (Kind(kind)) {
    case Kind::AllReduce: return "ncclAllReduce";
    case Kind::Broadcast: return "ncclBroadcast";
    case Kind::AllGather: return "ncclAllGather";
  }
  return "a collective";
}

const char* type_name(int32_t type) {
  switch (ncclDataType_t(type)) {
    case ncclInt8: return "int8";
    case ncclUint8: return "uint8";
    case ncclInt32: return "int32";
    case ncclUint32: return "uint32";
    case ncclInt64: return "int64";
    case ncclUint64: return "uint64";
    case ncclFloat16: return "float16";
    case ncclFloat32: return "float32";
    case ncclFloat64: return "float64";
    case ncclBfloat16: return "bfloat16";
    default: return "another type";
  }
}

size_t type_size(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

std::string describe(const Collective& c) {
  std::string s = std::string(kind_name(c.kind)) + " of " + std::to_string(c.count) + " " + type_name(c.dtype);
  if (Kind(c.kind) == Kind::AllReduce) s += c.redop == ncclSum ? " (sum)" : " (op " + std::to_string(c.redop) + ")";
  if (Kind(c.kind) == Kind::Broadcast) s += " from root " + std::to_string(c.root);
  return s;
}

// The segment's lock; a rank that died holding it leaves the communicator failed.
class SegmentLock {
 public:
  explicit SegmentLock(Segment* s) : s_(s) {
    if (pthread_mutex_lock(&s_->mutex) == EOWNERDEAD) {
      pthread_mutex_consistent(&s_->mutex);
      if (!s_->failed) {
        s_->failed = 1;
        std::snprintf(s_->failure, sizeof s_->failure, "a rank died inside the communicator's lock");
      }
    }
  }
  ~SegmentLock() { pthread_mutex_unlock(&s_->mutex); }
  SegmentLock(const SegmentLock&) = delete;
  SegmentLock& operator=(const SegmentLock&) = delete;

 private:
  Segment* s_;
};

// Marks the communicator failed for every rank and throws the fault here.
[[noreturn]] void fail_all(ncclComm* c, const std::string& message) {
  Segment* s = c->segment;
  if (!s->failed) {
    s->failed = 1;
    std::snprintf(s->failure, sizeof s->failure, "%s", message.c_str());
  }
  pthread_cond_broadcast(&s->changed);
  c->async_error = ncclRemoteError;
  throw KernelFault("emulated NCCL (rank " + std::to_string(c->rank) + "): " + std::string(s->failure));
}

// Waits, holding the segment's lock, until every rank satisfies `ready`;
// fails the communicator when one has failed it, when a rank that is not
// ready has exited, or after the timeout (naming the ranks not ready).
template <typename Ready>
void wait_for_all(ncclComm* c, Ready&& ready, const std::string& what) {
  Segment* s = c->segment;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds());
  while (true) {
    if (s->failed) fail_all(c, s->failure);
    std::vector<int> missing;
    for (int r = 0; r < c->nranks; ++r)
      if (!ready(s->ranks[r])) missing.push_back(r);
    if (missing.empty()) return;
    for (const int r : missing)
      if (s->ranks[r].pid != 0 && !process_alive(s->ranks[r].pid))
        fail_all(c, "rank " + std::to_string(r) + " (pid " + std::to_string(s->ranks[r].pid) + ") exited while rank " +
                        std::to_string(c->rank) + " waited for it at " + what);
    if (std::chrono::steady_clock::now() > deadline) {
      std::string list;
      for (const int r : missing) list += (list.empty() ? "" : ", ") + std::to_string(r);
      fail_all(c, "rank" + std::string(missing.size() > 1 ? "s " : " ") + list + " never arrived at " + what +
                      " (rank " + std::to_string(c->rank) + " waited " + std::to_string(timeout_seconds()) +
                      " s: ASTRAI_EMULATED_NCCL_TIMEOUT_S)");
    }
    timespec until{};
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 20'000'000;  // 20 ms: then look at the peers' processes again
    if (until.tv_nsec >= 1'000'000'000) {
      until.tv_sec += 1;
      until.tv_nsec -= 1'000'000'000;
    }
    pthread_cond_timedwait(&s->changed, &s->mutex, &until);
  }
}

// One round of a collective: this rank stages `bytes` bytes (none: nothing
// to give), every rank arrives, `consume` reads the ranks' staging areas,
// every rank is done reading. The first round checks that every rank runs
// the same collective.
template <typename Consume>
void round(ncclComm* c, const Collective& op, bool first, const void* data, size_t bytes, Consume&& consume) {
  Segment* s = c->segment;
  const uint64_t r = ++c->round;
  const std::string what = "collective #" + std::to_string(op.index) + " (" + describe(op) + ")";
  {
    SegmentLock lock(s);
    if (s->failed) fail_all(c, s->failure);
    if (bytes > 0) std::memcpy(s->staging(c->rank), data, bytes);
    s->ranks[c->rank].op = op;
    s->ranks[c->rank].arrived = r;
    pthread_cond_broadcast(&s->changed);
    wait_for_all(c, [&](const RankSlot& slot) { return slot.arrived >= r; }, what);
    if (first)
      for (int k = 0; k < c->nranks; ++k)
        if (!(s->ranks[k].op == op))
          fail_all(c, "collective #" + std::to_string(op.index) + " differs between ranks: rank " +
                          std::to_string(c->rank) + " runs " + describe(op) + ", rank " + std::to_string(k) +
                          " runs " + (s->ranks[k].op.index == op.index
                                          ? describe(s->ranks[k].op)
                                          : "its collective #" + std::to_string(s->ranks[k].op.index) + " (" +
                                                describe(s->ranks[k].op) + ")"));
  }
  consume();  // the staging areas stay as they are until every rank is done
  SegmentLock lock(s);
  s->ranks[c->rank].done = r;
  pthread_cond_broadcast(&s->changed);
  wait_for_all(c, [&](const RankSlot& slot) { return slot.done >= r; }, what);
}

template <typename T>
void sum_in_rank_order(Segment* s, int nranks, size_t offset_bytes, size_t n, T* out) {
  for (size_t i = 0; i < n; ++i) {
    T acc = reinterpret_cast<const T*>(s->staging(0))[i];
    for (int r = 1; r < nranks; ++r) acc = acc + reinterpret_cast<const T*>(s->staging(r))[i];
    out[offset_bytes / sizeof(T) + i] = acc;
  }
}

// Calls chunk(done, n) for consecutive pieces [done, done + n) of `total`
// units, `per_round` at most each: one round of the staging area a piece.
template <typename Chunk>
void in_rounds(size_t total, size_t per_round, Chunk&& chunk) {
  for (size_t done = 0; done < total;) {
    const size_t n = std::min(per_round, total - done);
    chunk(done, n);
    done += n;
  }
}

void all_reduce(ncclComm* c, Collective op, const void* send, void* recv) {
  op.index = ++c->next_collective;
  const size_t es = type_size(ncclDataType_t(op.dtype));
  in_rounds(op.count, kStagingBytes / es, [&](size_t done, size_t n) {  // in elements
    round(c, op, done == 0, static_cast<const unsigned char*>(send) + done * es, n * es, [&] {
      Segment* s = c->segment;
      switch (ncclDataType_t(op.dtype)) {
        case ncclFloat32: sum_in_rank_order(s, c->nranks, done * es, n, static_cast<float*>(recv)); break;
        case ncclFloat64: sum_in_rank_order(s, c->nranks, done * es, n, static_cast<double*>(recv)); break;
        case ncclInt32: sum_in_rank_order(s, c->nranks, done * es, n, static_cast<int32_t*>(recv)); break;
        case ncclInt64: sum_in_rank_order(s, c->nranks, done * es, n, static_cast<int64_t*>(recv)); break;
        default: break;  // refused when called
      }
    });
  });
}

void broadcast(ncclComm* c, Collective op, const void* send, void* recv) {
  op.index = ++c->next_collective;
  const bool root = c->rank == op.root;
  in_rounds(op.count * type_size(ncclDataType_t(op.dtype)), kStagingBytes, [&](size_t done, size_t n) {  // bytes
    round(c, op, done == 0, static_cast<const unsigned char*>(send) + (root ? done : 0), root ? n : 0, [&] {
      std::memmove(static_cast<unsigned char*>(recv) + done, c->segment->staging(op.root), n);
    });
  });
}

void all_gather(ncclComm* c, Collective op, const void* send, void* recv) {
  op.index = ++c->next_collective;
  const size_t bytes = size_t(op.count) * type_size(ncclDataType_t(op.dtype));
  in_rounds(bytes, kStagingBytes, [&](size_t done, size_t n) {
    round(c, op, done == 0, static_cast<const unsigned char*>(send) + done, n, [&] {
      for (int r = 0; r < c->nranks; ++r)
        std::memmove(static_cast<unsigned char*>(recv) + size_t(r) * bytes + done, c->segment->staging(r), n);
    });
  });
}

// The checks every collective call makes before it is queued.
ncclResult_t check_call(ncclComm* c, const char* name, ncclDataType_t type, std::initializer_list<std::pair<const void*, size_t>> buffers,
                        cudaStream_t stream) {
  if (c == nullptr || c->segment == nullptr) return error(c, ncclInvalidArgument, std::string(name) + ": no communicator");
  if (type_size(type) == 0) return error(c, ncclInvalidArgument, std::string(name) + ": unknown data type");
  for (const auto& [p, bytes] : buffers)
    if (bytes > 0 && !is_device_range(p, bytes))
      return error(c, ncclInvalidArgument,
                   std::string(name) + " (rank " + std::to_string(c->rank) + "): a buffer of " +
                       std::to_string(bytes) + " bytes is not device memory of this process (another rank's " +
                       "pointer never is: each rank has its own memory)");
  if (stream_device(stream) != c->device)
    return error(c, ncclInvalidUsage,
                 std::string(name) + " (rank " + std::to_string(c->rank) + "): a stream of device " +
                     std::to_string(stream_device(stream)) + " on a communicator of device " +
                     std::to_string(c->device));
  if (c->async_error != ncclSuccess) return error(c, c->async_error, std::string(name) + ": the communicator failed");
  return ncclSuccess;
}

std::string segment_name(const ncclUniqueId& id) {
  const std::string text(id.internal, strnlen(id.internal, sizeof id.internal));
  if (text.rfind(kIdPrefix, 0) != 0) return "";
  return text.substr(sizeof kIdPrefix - 1);
}

// Opens (or creates and initialises) the segment of `name` for `nranks`.
ncclResult_t open_segment(ncclComm* c, const std::string& name, int nranks) {
  const size_t bytes = Segment::bytes(nranks);
  bool creator = true;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    creator = false;
    fd = shm_open(name.c_str(), O_RDWR, 0600);
  }
  if (fd < 0) return error(c, ncclSystemError, "shm_open(" + name + "): " + std::strerror(errno));
  if (creator && ftruncate(fd, off_t(bytes)) != 0) {
    close(fd);
    return error(c, ncclSystemError, "ftruncate(" + name + "): " + std::strerror(errno));
  }
  // A joining rank waits for the creator's size and initialisation.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds());
  struct stat st {};
  while (!creator && (fstat(fd, &st) != 0 || size_t(st.st_size) < sizeof(Segment))) {
    if (std::chrono::steady_clock::now() > deadline) {
      close(fd);
      return error(c, ncclSystemError, "the communicator " + name + " was never initialised");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const size_t mapped = creator ? bytes : size_t(st.st_size);
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return error(c, ncclSystemError, "mmap(" + name + "): " + std::strerror(errno));
  auto* s = static_cast<Segment*>(p);
  c->segment = s;
  c->mapped = mapped;
  if (creator) {
    s->nranks = nranks;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&s->mutex, &ma);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_cond_init(&s->changed, &ca);
    s->ready.store(kReady, std::memory_order_release);
    return ncclSuccess;
  }
  while (s->ready.load(std::memory_order_acquire) != kReady) {
    if (std::chrono::steady_clock::now() > deadline)
      return error(c, ncclSystemError, "the communicator " + name + " was never initialised");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (s->nranks != nranks || mapped < bytes) {
    SegmentLock lock(s);
    const std::string message = "rank " + std::to_string(c->rank) + " was told of " + std::to_string(nranks) +
                                " ranks, the communicator has " + std::to_string(s->nranks);
    if (!s->failed) {
      s->failed = 1;
      std::snprintf(s->failure, sizeof s->failure, "%s", message.c_str());
    }
    pthread_cond_broadcast(&s->changed);
    return error(c, ncclInvalidUsage, message);
  }
  return ncclSuccess;
}

// Every rank's process joins; rank 0 then unlinks the name (the mappings stay).
ncclResult_t join(ncclComm* c, const std::string& name) {
  Segment* s = c->segment;
  try {
    SegmentLock lock(s);
    if (s->failed) fail_all(c, s->failure);
    RankSlot& me = s->ranks[c->rank];
    if (me.joined)
      fail_all(c, "two processes claim rank " + std::to_string(c->rank) + ": pids " + std::to_string(me.pid) +
                      " and " + std::to_string(getpid()));
    for (int r = 0; r < s->nranks; ++r)
      if (s->ranks[r].joined && s->ranks[r].pid == getpid())
        fail_all(c, "ranks " + std::to_string(r) + " and " + std::to_string(c->rank) + " are both in process " +
                        std::to_string(getpid()) + ": the emulated NCCL runs one rank per process");
    me.pid = getpid();
    me.joined = 1;
    pthread_cond_broadcast(&s->changed);
    wait_for_all(c, [](const RankSlot& slot) { return slot.joined != 0; }, "ncclCommInitRank");
  } catch (const KernelFault& fault) {
    return error(c, ncclRemoteError, fault.what());
  }
  if (c->rank == 0) shm_unlink(name.c_str());
  return ncclSuccess;
}

}  // namespace
}  // namespace astrai::emu::nccl

using namespace astrai::emu::nccl;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id->internal, 0, sizeof id->internal);
  std::random_device device;
  const uint64_t nonce = (uint64_t(device()) << 32) ^ device();
  std::snprintf(id->internal, sizeof id->internal, "%s/astrai-nccl-%d-%016llx", kIdPrefix, int(getpid()),
                static_cast<unsigned long long>(nonce));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  *comm = nullptr;
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks)
    return error(nullptr, ncclInvalidArgument,
                 "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                     " (1 to " + std::to_string(kMaxRanks) + " ranks)");
  const std::string name = segment_name(id);
  if (name.empty()) return error(nullptr, ncclInvalidArgument, "ncclCommInitRank: not an id of ncclGetUniqueId");
  auto c = std::make_unique<ncclComm>();
  c->rank = rank;
  c->nranks = nranks;
  c->device = astrai::emu::current_device();
  ncclResult_t result = open_segment(c.get(), name, nranks);
  if (result == ncclSuccess) result = join(c.get(), name);
  if (result != ncclSuccess) {
    if (c->segment) munmap(c->segment, c->mapped);
    shm_unlink(name.c_str());  // a failed communicator is never joined again: leave nothing in /dev/shm
    return result;
  }
  *comm = c.release();
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (comm->segment) munmap(comm->segment, comm->mapped);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (comm->segment) {
    Segment* s = comm->segment;
    SegmentLock lock(s);
    if (!s->failed) {
      s->failed = 1;
      std::snprintf(s->failure, sizeof s->failure, "rank %d aborted the communicator", comm->rank);
    }
    pthread_cond_broadcast(&s->changed);
  }
  return ncclCommDestroy(comm);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (comm == nullptr) return ncclInvalidArgument;
  *async_error = comm->async_error;
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  return comm != nullptr && !comm->last_error.empty() ? comm->last_error.c_str() : t_nccl_last_error.c_str();
}

// Group calls: each collective is queued as it is called, in order, so a
// group changes nothing here.
ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = count * type_size(datatype);
  if (const auto r = check_call(comm, "ncclAllReduce", datatype, {{sendbuff, bytes}, {recvbuff, bytes}}, stream);
      r != ncclSuccess)
    return r;
  if (op != ncclSum) return error(comm, ncclInvalidArgument, "ncclAllReduce: the emulated NCCL sums only");
  if (datatype != ncclFloat32 && datatype != ncclFloat64 && datatype != ncclInt32 && datatype != ncclInt64)
    return error(comm, ncclInvalidArgument,
                 std::string("ncclAllReduce: the emulated NCCL sums float32, float64, int32 and int64, not ") +
                     type_name(datatype));
  if (count == 0) return ncclSuccess;
  const Collective c{0, int32_t(Kind::AllReduce), int32_t(datatype), int32_t(op), 0, count};
  astrai::emu::enqueue_host_work(stream, [=] { all_reduce(comm, c, sendbuff, recvbuff); });
  return ncclSuccess;
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = count * type_size(datatype);
  const bool is_root = comm != nullptr && comm->rank == root;
  if (const auto r = check_call(comm, "ncclBroadcast", datatype, {{is_root ? sendbuff : nullptr, is_root ? bytes : 0},
                                                                  {recvbuff, bytes}},
                                stream);
      r != ncclSuccess)
    return r;
  if (root < 0 || root >= comm->nranks)
    return error(comm, ncclInvalidArgument, "ncclBroadcast: root " + std::to_string(root) + " is not a rank");
  if (count == 0) return ncclSuccess;
  const Collective c{0, int32_t(Kind::Broadcast), int32_t(datatype), 0, int32_t(root), count};
  astrai::emu::enqueue_host_work(stream, [=] { broadcast(comm, c, sendbuff, recvbuff); });
  return ncclSuccess;
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = sendcount * type_size(datatype);
  const size_t ranks = comm != nullptr ? size_t(comm->nranks) : 1;
  if (const auto r = check_call(comm, "ncclAllGather", datatype, {{sendbuff, bytes}, {recvbuff, bytes * ranks}}, stream);
      r != ncclSuccess)
    return r;
  if (sendcount == 0) return ncclSuccess;
  const Collective c{0, int32_t(Kind::AllGather), int32_t(datatype), 0, 0, sendcount};
  astrai::emu::enqueue_host_work(stream, [=] { all_gather(comm, c, sendbuff, recvbuff); });
  return ncclSuccess;
}

}  // extern "C"
