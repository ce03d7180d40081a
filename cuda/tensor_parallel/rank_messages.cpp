#include "cuda/tensor_parallel/rank_messages.h"

#include <msgpack.hpp>

#include <stdexcept>
#include <tuple>

namespace astrai::cuda::tp {
namespace {

// Each body as a tuple of its fields (msgpack packs a tuple as an array).
auto fields(const Hello& m) { return std::make_tuple(m.rank, m.world, m.pid, m.host, m.model); }
auto fields(const Setup& m) {
  return std::make_tuple(msgpack::type::raw_ref(m.nccl_id.data(), uint32_t(m.nccl_id.size())), m.dtype, m.cuda_graphs,
                         m.batch_invariant, m.poison_scratch);
}
auto fields(const Ready& m) { return std::make_tuple(m.weights_bytes, m.free_bytes); }
auto fields(const Failed& m) { return std::make_tuple(m.message); }
auto fields(const CreateCache& m) { return std::make_tuple(m.id, m.n_pages, m.page_size); }
auto fields(const DropCache& m) { return std::make_tuple(m.id); }
auto fields(const Shutdown&) { return std::make_tuple(0); }
auto plan_fields(const BatchPlan& p) {
  return std::make_tuple(p.rows, p.n_seqs, p.pages_per_seq, p.partial_rows, p.tokens, p.row_pos, p.row_seq,
                         p.row_slot, p.page_tables, p.decode_rows, p.tile_first, p.tile_count, p.tile_rows,
                         p.wanted_rows, p.row_partial, p.chunk_tiles);
}
auto fields(const Step& m) { return std::make_tuple(m.cache, m.padded, m.copies, plan_fields(m.plan)); }

template <typename Body>
std::string pack(Kind kind, const Body& m) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, std::make_tuple(int(kind), fields(m)));
  return std::string(buffer.data(), buffer.size());
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Hello: return "Hello";
    case Kind::Setup: return "Setup";
    case Kind::Ready: return "Ready";
    case Kind::Failed: return "Failed";
    case Kind::CreateCache: return "CreateCache";
    case Kind::DropCache: return "DropCache";
    case Kind::Step: return "Step";
    case Kind::Shutdown: return "Shutdown";
  }
  return "an unknown message";
}

// msgpack::unpack of a frame, every container bounded by the frame's length:
// each element takes at least a byte, so a header claiming more (a corrupt
// frame's array32 of 2^32 - 1) is refused by the unpacker (size_overflow, an
// unpack_error) before it reserves room for them.
msgpack::object_handle unpack_bounded(std::string_view frame) {
  const size_t n = frame.size();
  return msgpack::unpack(frame.data(), n, nullptr, nullptr, msgpack::unpack_limit(n, n, n, n, n, 64));
}

// The body object of a frame of kind `want`; keeps the unpacked handle alive.
struct Unpacked {
  msgpack::object_handle handle;
  msgpack::object body;
};
Unpacked unpack(std::string_view frame, Kind want) {
  Unpacked u;
  try {
    u.handle = unpack_bounded(frame);
    const msgpack::object& o = u.handle.get();
    if (o.type != msgpack::type::ARRAY || o.via.array.size != 2) throw std::runtime_error("not [kind, body]");
    const Kind got = Kind(o.via.array.ptr[0].as<int>());
    if (got != want)
      throw std::runtime_error(std::string("a ") + kind_name(got) + " message where " + kind_name(want) +
                               " was expected");
    u.body = o.via.array.ptr[1];
  } catch (const msgpack::type_error&) {
    throw std::runtime_error(std::string("a malformed ") + kind_name(want) + " message");
  } catch (const msgpack::unpack_error& e) {
    throw std::runtime_error(std::string("an undecodable message: ") + e.what());
  }
  return u;
}

template <typename Tuple>
Tuple convert(const msgpack::object& body, Kind kind) {
  try {
    Tuple t;
    body.convert(t);
    return t;
  } catch (const std::exception&) {
    throw std::runtime_error(std::string("a malformed ") + kind_name(kind) + " message");
  }
}

}  // namespace

std::string encode(const Hello& m) { return pack(Kind::Hello, m); }
std::string encode(const Setup& m) { return pack(Kind::Setup, m); }
std::string encode(const Ready& m) { return pack(Kind::Ready, m); }
std::string encode(const Failed& m) { return pack(Kind::Failed, m); }
std::string encode(const CreateCache& m) { return pack(Kind::CreateCache, m); }
std::string encode(const DropCache& m) { return pack(Kind::DropCache, m); }
std::string encode(const Step& m) { return pack(Kind::Step, m); }
std::string encode(const Shutdown& m) { return pack(Kind::Shutdown, m); }

Kind kind_of(std::string_view frame) {
  try {
    const msgpack::object_handle h = unpack_bounded(frame);
    const msgpack::object& o = h.get();
    if (o.type != msgpack::type::ARRAY || o.via.array.size != 2) throw std::runtime_error("");
    const int k = o.via.array.ptr[0].as<int>();
    if (k < int(Kind::Hello) || k > int(Kind::Shutdown)) throw std::runtime_error("");
    return Kind(k);
  } catch (const std::exception&) {
    throw std::runtime_error("a frame that is not a tensor-parallel message");
  }
}

Hello decode_hello(std::string_view frame) {
  const Unpacked u = unpack(frame, Kind::Hello);
  Hello m;
  std::tie(m.rank, m.world, m.pid, m.host, m.model) =
      convert<std::tuple<int, int, int, std::string, std::string>>(u.body, Kind::Hello);
  return m;
}

Setup decode_setup(std::string_view frame) {
  const Unpacked u = unpack(frame, Kind::Setup);
  const auto t = convert<std::tuple<msgpack::type::raw_ref, int, bool, bool, bool>>(u.body, Kind::Setup);
  Setup m;
  m.nccl_id.assign(std::get<0>(t).ptr, std::get<0>(t).size);
  std::tie(std::ignore, m.dtype, m.cuda_graphs, m.batch_invariant, m.poison_scratch) = t;
  return m;
}

Ready decode_ready(std::string_view frame) {
  const Unpacked u = unpack(frame, Kind::Ready);
  Ready m;
  std::tie(m.weights_bytes, m.free_bytes) = convert<std::tuple<uint64_t, uint64_t>>(u.body, Kind::Ready);
  return m;
}

Failed decode_failed(std::string_view frame) {
  const Unpacked u = unpack(frame, Kind::Failed);
  return Failed{std::get<0>(convert<std::tuple<std::string>>(u.body, Kind::Failed))};
}

CreateCache decode_create_cache(std::string_view frame) {
  const Unpacked u = unpack(frame, Kind::CreateCache);
  CreateCache m;
  std::tie(m.id, m.n_pages, m.page_size) = convert<std::tuple<int, int, int>>(u.body, Kind::CreateCache);
  return m;
}

DropCache decode_drop_cache(std::string_view frame) {
  const Unpacked u = unpack(frame, Kind::DropCache);
  return DropCache{std::get<0>(convert<std::tuple<int>>(u.body, Kind::DropCache))};
}

Step decode_step(std::string_view frame) {
  const Unpacked u = unpack(frame, Kind::Step);
  using Ints = std::vector<int>;
  using PlanTuple = std::tuple<int, int, int, int, Ints, Ints, Ints, Ints, Ints, Ints, Ints, Ints, Ints, Ints, Ints, Ints>;
  const auto t = convert<std::tuple<int, bool, Ints, PlanTuple>>(u.body, Kind::Step);
  Step m;
  m.cache = std::get<0>(t);
  m.padded = std::get<1>(t);
  m.copies = std::get<2>(t);
  BatchPlan& p = m.plan;
  std::tie(p.rows, p.n_seqs, p.pages_per_seq, p.partial_rows, p.tokens, p.row_pos, p.row_seq, p.row_slot,
           p.page_tables, p.decode_rows, p.tile_first, p.tile_count, p.tile_rows, p.wanted_rows, p.row_partial,
           p.chunk_tiles) = std::get<3>(t);
  return m;
}

void check_rank_plan(const BatchPlan& p, int n_pages, int page_size, int padding_slots, int vocab_size) {
  const auto fail = [](const std::string& what) { throw std::runtime_error("a step's plan from rank 0: " + what); };
  const auto all_in = [&](const std::vector<int>& v, int end, const char* what) {
    for (const int x : v)
      if (x < 0 || x >= end) fail(std::string(what) + " " + std::to_string(x) + " is outside [0, " + std::to_string(end) + ")");
  };
  const size_t rows = size_t(p.rows);
  if (p.rows < 0 || p.n_seqs < 0 || p.pages_per_seq < 0 || p.partial_rows < 0) fail("a negative count");
  for (const auto* v : {&p.tokens, &p.row_pos, &p.row_seq, &p.row_slot, &p.row_partial})
    if (v->size() != rows) fail("a per-row list of " + std::to_string(v->size()) + " for " + std::to_string(rows) + " rows");
  if (p.page_tables.size() != size_t(p.n_seqs) * size_t(p.pages_per_seq)) fail("page tables of the wrong size");
  if (p.tile_first.size() != p.tile_count.size()) fail("tile lists of different lengths");
  all_in(p.tokens, vocab_size, "token");
  all_in(p.row_pos, p.pages_per_seq * page_size, "position");
  all_in(p.row_seq, p.n_seqs, "sequence");
  all_in(p.row_slot, n_pages * page_size + padding_slots, "slot");
  all_in(p.page_tables, n_pages, "page");
  all_in(p.decode_rows, p.rows, "decode row");
  all_in(p.tile_rows, p.rows, "tile row");
  all_in(p.wanted_rows, p.rows, "wanted row");
  all_in(p.row_partial, std::max(p.partial_rows, 1), "partial index");
  for (size_t i = 0; i < p.tile_first.size(); ++i)
    if (p.tile_first[i] < 0 || p.tile_count[i] < 0 || size_t(p.tile_first[i]) + size_t(p.tile_count[i]) > p.tile_rows.size())
      fail("tile " + std::to_string(i) + " outside its rows");
  int previous = 0;
  for (const int c : p.chunk_tiles) {
    if (c < previous || size_t(c) > p.tile_first.size()) fail("prefill chunks out of order");
    previous = c;
  }
}

}  // namespace astrai::cuda::tp
