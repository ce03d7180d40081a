// What rank 0 and the other tensor-parallel ranks say to each other over
// their connections (engine/distributed/frame_socket.h), one msgpack array
// [kind, body] a frame. Startup: a rank says Hello; rank 0 answers Setup
// (the NCCL id and the executor's options); the rank answers Ready once its
// shard is on its device (or Failed). Serving: rank 0 sends CreateCache,
// Step (each step's plan, and the page copies since the last step) and
// DropCache in the order its own cache and executor see them, then
// Shutdown. A rank that fails says Failed before it exits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/batch_plan.h"

namespace astrai::cuda::tp {

enum class Kind : int { Hello = 1, Setup, Ready, Failed, CreateCache, DropCache, Step, Shutdown };

struct Hello {
  int rank = 0, world = 0, pid = 0;
  std::string host;
  std::string model;  // the model's shape, as rank 0 checks it against its own
};
struct Setup {
  std::string nccl_id;
  int dtype = 0;  // cuda::DType
  bool cuda_graphs = true, batch_invariant = false, poison_scratch = false;
};
struct Ready {
  uint64_t weights_bytes = 0;  // device memory of the rank's shard
  uint64_t free_bytes = 0;     // device memory free after it
};
struct Failed {
  std::string message;
};
struct CreateCache {
  int id = 0, n_pages = 0, page_size = 0;
};
struct DropCache {
  int id = 0;
};
struct Step {
  int cache = 0;
  bool padded = false;
  std::vector<int> copies;  // page copies since the last step, as (from, to) pairs, in order
  BatchPlan plan;
};
struct Shutdown {};

std::string encode(const Hello& m);
std::string encode(const Setup& m);
std::string encode(const Ready& m);
std::string encode(const Failed& m);
std::string encode(const CreateCache& m);
std::string encode(const DropCache& m);
std::string encode(const Step& m);
std::string encode(const Shutdown& m);

// The kind of a frame; throws std::runtime_error for a frame that is not a message.
Kind kind_of(std::string_view frame);
// The body of a frame of that kind; throws std::runtime_error for another
// kind or a body of the wrong shape.
Hello decode_hello(std::string_view frame);
Setup decode_setup(std::string_view frame);
Ready decode_ready(std::string_view frame);
Failed decode_failed(std::string_view frame);
CreateCache decode_create_cache(std::string_view frame);
DropCache decode_drop_cache(std::string_view frame);
Step decode_step(std::string_view frame);

// Whether a plan from rank 0 is one this rank can run on a cache of
// `n_pages` pages of `page_size` (every index in range, every list of its
// length), so that a corrupt message is an error and never a device fault;
// throws std::runtime_error naming the first problem.
void check_rank_plan(const BatchPlan& plan, int n_pages, int page_size, int padding_slots, int vocab_size);

}  // namespace astrai::cuda::tp
