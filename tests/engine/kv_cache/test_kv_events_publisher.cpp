// The KV events publisher on its own (server/kv_events_publisher.h), over
// inproc:// sockets in one ZeroMQ context, with its loop run by the test
// (no thread), so that what is queued, sent and dropped is decided by the
// test and not by timing. An inproc pipe has no kernel buffers: a
// subscriber that does not read fills it after a few messages (its
// high-water marks), and then every send is refused.
//
// Messages are read back with msgpack-cxx's generic unpacker (a decoder of
// any msgpack, not the encoder under test): the field names, order and
// values of vLLM's structs (kv_event_encoding.h). tests/reliability's
// test_kv_events.py decodes the real server's stream with Python's msgpack.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <msgpack.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "engine/kv_cache/events/kv_event_encoding.h"
#include "engine/kv_cache/events/kv_events_config.h"
#include "engine/kv_cache/events/kv_events_publisher.h"

namespace {

using namespace astrai;

uint64_t from_big_endian(const zmq::message_t& frame) {
  REQUIRE(frame.size() == 8);
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = v << 8 | frame.data<uint8_t>()[i];
  return v;
}

// A decoded message: its sequence number and the types of its events, with
// the first BlockStored's first hash (each test batch stores one distinct hash).
struct Message {
  uint64_t seq;
  std::vector<std::string> types;
  uint64_t first_hash = 0;
};

std::map<std::string, msgpack::object> fields(const msgpack::object& map, std::vector<std::string>* order) {
  REQUIRE(map.type == msgpack::type::MAP);
  std::map<std::string, msgpack::object> out;
  for (uint32_t i = 0; i < map.via.map.size; ++i) {
    const std::string key = map.via.map.ptr[i].key.as<std::string>();
    if (order) order->push_back(key);
    out[key] = map.via.map.ptr[i].val;
  }
  return out;
}

Message decode(const std::vector<zmq::message_t>& frames, const std::string& topic) {
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].to_string() == topic);
  Message m{from_big_endian(frames[1]), {}};
  const msgpack::object_handle handle = msgpack::unpack(frames[2].data<char>(), frames[2].size());
  const msgpack::object& batch = handle.get();
  REQUIRE(batch.type == msgpack::type::ARRAY);
  REQUIRE(batch.via.array.size == 3);
  CHECK(batch.via.array.ptr[0].type == msgpack::type::FLOAT64);
  CHECK(batch.via.array.ptr[2].as<int>() == 0);  // data_parallel_rank
  const msgpack::object& events = batch.via.array.ptr[1];
  for (uint32_t i = 0; i < events.via.array.size; ++i) {
    auto f = fields(events.via.array.ptr[i], nullptr);
    m.types.push_back(f.at("type").as<std::string>());
    if (m.types.back() == "BlockStored" && m.types.size() == 1)
      m.first_hash = f.at("block_hashes").via.array.ptr[0].as<uint64_t>();
  }
  return m;
}

std::vector<Message> drain(zmq::socket_t& sub, const std::string& topic) {
  std::vector<Message> out;
  for (;;) {
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(sub, std::back_inserter(frames), zmq::recv_flags::dontwait)) return out;
    out.push_back(decode(frames, topic));
  }
}

std::vector<KVCacheEvent> stored(uint64_t hash) { return {KVBlockStored{{hash}, std::nullopt, {1, 2}}}; }

KVEventsConfig inproc_config(const std::string& name) {
  KVEventsConfig c;
  c.enable_kv_cache_events = true;
  c.endpoint = "inproc://" + name;
  c.topic = "kv@test@model";
  return c;
}

// Subscriptions reach a PUB socket asynchronously: until one has, what it
// sends matches no one and is lost. Probes until the subscriber hears one
// (an event wait; the bound is a hang guard) and returns the next seq.
uint64_t handshake(KVEventsPublisher& pub, zmq::socket_t& sub, const std::string& topic) {
  // Probes until one arrives; then waits until everything published has
  // arrived and nothing is due: a probe the pipe refused while an earlier one
  // was not yet visible to the subscriber (seen under AddressSanitizer) is
  // counted as dropped and makes a resync due, which goes out here. The test
  // then starts from an empty pipe, its counts taken after this. The wait is
  // bounded by time, not by a number of polls, so a slow machine only waits longer.
  bool heard = false;
  uint64_t next = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!heard) pub.publish(stored(9999));
    pub.run_once(std::chrono::milliseconds(0));
    for (const Message& m : drain(sub, topic)) {
      heard = true;
      next = m.seq + 1;
    }
    const auto c = pub.counts();
    if (heard && !c.resync_pending && c.queued == 0 && next == c.published) return next;
    if (heard) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  FAIL("the subscriber never heard the publisher, or never received all it sent");
  return 0;
}

// Runs the publisher and reads until `n` messages have arrived, or 60 s
// have passed (then fewer come back, and the caller's check fails).
std::vector<Message> receive(KVEventsPublisher& pub, zmq::socket_t& sub, const std::string& topic, size_t n) {
  std::vector<Message> got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (got.size() < n && std::chrono::steady_clock::now() < deadline) {
    pub.run_once(std::chrono::milliseconds(0));
    for (const Message& m : drain(sub, topic)) got.push_back(m);
    if (got.size() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return got;
}

}  // namespace

TEST_CASE("A KV event batch is encoded as vLLM's msgspec structs", "[kv_events]") {
  const uint64_t big = 0xfedcba9876543210ULL;  // past 2^63: msgpack uint 64
  const std::vector<KVCacheEvent> events = {KVBlockStored{{big, 7}, std::nullopt, {1, 200, 70000, 3}},
                                            KVBlockStored{{8}, 7, {5, 6}}, KVBlockRemoved{{big}},
                                            KVAllBlocksCleared{}};
  const std::string bytes = encode_kv_event_batch(1757500000.25, events, KVEventStamp{2, "CPU", 0});
  const msgpack::object_handle handle = msgpack::unpack(bytes.data(), bytes.size());
  const msgpack::object& batch = handle.get();
  REQUIRE(batch.type == msgpack::type::ARRAY);
  REQUIRE(batch.via.array.size == 3);  // [ts, events, data_parallel_rank]
  CHECK(batch.via.array.ptr[0].as<double>() == 1757500000.25);
  CHECK(batch.via.array.ptr[2].as<int>() == 0);
  const msgpack::object& list = batch.via.array.ptr[1];
  REQUIRE(list.via.array.size == 4);

  std::vector<std::string> order;
  auto first = fields(list.via.array.ptr[0], &order);
  CHECK(order == std::vector<std::string>{"type", "block_hashes", "parent_block_hash", "token_ids", "block_size",
                                          "lora_id", "medium", "lora_name", "extra_keys", "group_idx",
                                          "kv_cache_spec_kind"});
  CHECK(first.at("type").as<std::string>() == "BlockStored");
  CHECK(first.at("block_hashes").as<std::vector<uint64_t>>() == std::vector<uint64_t>{big, 7});
  CHECK(first.at("block_hashes").via.array.ptr[0].type == msgpack::type::POSITIVE_INTEGER);
  CHECK(first.at("parent_block_hash").is_nil());
  CHECK(first.at("token_ids").as<std::vector<int>>() == std::vector<int>{1, 200, 70000, 3});
  CHECK(first.at("block_size").as<int>() == 2);
  CHECK(first.at("lora_id").is_nil());
  CHECK(first.at("medium").as<std::string>() == "CPU");
  CHECK(first.at("lora_name").is_nil());
  REQUIRE(first.at("extra_keys").via.array.size == 2);  // one nil per block
  CHECK(first.at("extra_keys").via.array.ptr[1].is_nil());
  CHECK(first.at("group_idx").as<int>() == 0);
  CHECK(first.at("kv_cache_spec_kind").as<std::string>() == "full_attention");

  CHECK(fields(list.via.array.ptr[1], nullptr).at("parent_block_hash").as<uint64_t>() == 7);
  order.clear();
  auto removed = fields(list.via.array.ptr[2], &order);
  CHECK(order == std::vector<std::string>{"type", "block_hashes", "medium", "group_idx"});
  CHECK(removed.at("type").as<std::string>() == "BlockRemoved");
  CHECK(removed.at("block_hashes").as<std::vector<uint64_t>>() == std::vector<uint64_t>{big});
  order.clear();
  CHECK(fields(list.via.array.ptr[3], &order).at("type").as<std::string>() == "AllBlocksCleared");
  CHECK(order == std::vector<std::string>{"type"});
}

TEST_CASE("The publisher sends [topic, seq, batch] in order and never blocks on a full queue", "[kv_events]") {
  zmq::context_t context(1);
  zmq::socket_t sub(context, zmq::socket_type::sub);
  KVEventsConfig config = inproc_config("queue");
  config.max_queue_size = 2;
  sub.set(zmq::sockopt::subscribe, "kv@");
  KVEventsPublisher pub(config, KVEventStamp{16, "GPU", 0}, &context, false);  // binds: inproc:// (endpoint_binds)
  sub.connect(config.endpoint);
  const uint64_t base = handshake(pub, sub, config.topic);
  const auto before = pub.counts();

  for (uint64_t h = 1; h <= 5; ++h) pub.publish(stored(h));  // 3 more than the queue holds
  auto c = pub.counts();
  CHECK(c.dropped_queue_full == 3);
  CHECK(c.queued == 2);
  const auto got = receive(pub, sub, config.topic, 3);  // the two queued batches, then the resync
  REQUIRE(got.size() == 3);
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].seq == base + i);  // no gap
  CHECK(got[0].first_hash == 1);
  CHECK(got[1].first_hash == 2);
  CHECK(got[2].types == std::vector<std::string>{"AllBlocksCleared"});  // the resync after the lost batches
  c = pub.counts();
  CHECK(c.resyncs == before.resyncs + 1);
  CHECK(c.published == base + 3);
  CHECK(c.queued == 0);
  // Every batch handed over is sent or counted as dropped (the handshake's probes were all sent).
  CHECK(c.batches == (c.published - c.resyncs) + c.dropped_queue_full + c.dropped_subscriber_full);
}

TEST_CASE("A subscriber at its high-water mark loses batches, counted, then gets a resync", "[kv_events]") {
  zmq::context_t context(1);
  zmq::socket_t sub(context, zmq::socket_type::sub);
  KVEventsConfig config = inproc_config("full");
  config.hwm = 1;
  sub.set(zmq::sockopt::rcvhwm, 1);  // the inproc pipe holds sndhwm + rcvhwm = 2 messages
  sub.set(zmq::sockopt::subscribe, "");
  KVEventsPublisher pub(config, KVEventStamp{}, &context, false);
  sub.connect(config.endpoint);
  const uint64_t base = handshake(pub, sub, config.topic);
  const auto before = pub.counts();

  for (uint64_t h = 1; h <= 10; ++h) {  // the subscriber reads nothing meanwhile
    pub.publish(stored(h));
    pub.run_once(std::chrono::milliseconds(0));
  }
  // The pipe took some messages and refused the rest. Which ones depends on
  // when ZeroMQ's writer learns of free room (a resync may slip in between
  // two refused batches, as seen under AddressSanitizer), so the test checks
  // what must hold whatever the pattern: every message the pipe took arrives,
  // in sequence with no gap; each is a batch, in publishing order, or a
  // resync; every batch that does not arrive is counted as dropped; after a
  // drop, a resync comes before the next batch and ends the stream if the
  // last batches were dropped.
  auto c = pub.counts();
  const uint64_t taken = c.published - base;
  const uint64_t dropped = c.dropped_subscriber_full - before.dropped_subscriber_full;
  REQUIRE(taken >= 1);
  REQUIRE(dropped >= 1);  // hwm 1: ten unread batches cannot all fit
  // Read until the taken messages and the due resync have arrived: a message
  // in the pipe may take a moment to become visible to the subscriber, so
  // the wait is bounded by time, not by a count of polls.
  std::vector<Message> got = receive(pub, sub, config.topic, taken + 1);
  REQUIRE(got.size() == taken + 1);
  uint64_t last_hash = 0, batches_seen = 0;
  bool resync_since_batch = false;
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].seq == base + i);  // no gap: seqs count accepted messages
    if (got[i].types == std::vector<std::string>{"AllBlocksCleared"}) {
      resync_since_batch = true;
      continue;
    }
    ++batches_seen;
    CHECK(got[i].first_hash > last_hash);  // in publishing order
    if (got[i].first_hash > last_hash + 1) CHECK(resync_since_batch);  // dropped batches before it: reported first
    last_hash = got[i].first_hash;
    resync_since_batch = false;
  }
  CHECK(last_hash < 10);  // the pipe was full at the end: batch 10 refused
  // The batches not seen are the drop count, and the last message is the
  // resync after the final loss.
  CHECK(batches_seen + dropped == 10);
  CHECK(got.back().types == std::vector<std::string>{"AllBlocksCleared"});
  c = pub.counts();
  CHECK(c.published == base + taken + 1);
  CHECK(c.batches == (c.published - c.resyncs) + c.dropped_queue_full + c.dropped_subscriber_full);
  // Afterwards, batches flow again. The publisher learns that the
  // subscriber has read asynchronously (ZeroMQ passes the reader's progress
  // back to the writer as a command), so the next batch may still meet what
  // looks like a full pipe (seen under AddressSanitizer): it is then counted
  // as dropped and a resync follows, as for any loss. Publish until a batch
  // arrives; every message is a resync or one of these batches, in sequence
  // with no gap, and the counts add up.
  uint64_t next_seq = base + taken + 1, hash = 11;  // after the taken messages and the final resync
  bool flowed = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!flowed && std::chrono::steady_clock::now() < deadline) {
    pub.publish(stored(hash++));
    for (const Message& m : receive(pub, sub, config.topic, 1)) {
      CHECK(m.seq == next_seq++);
      if (m.first_hash >= 11)
        flowed = true;  // one of the batches published here
      else
        CHECK(m.types == std::vector<std::string>{"AllBlocksCleared"});
    }
  }
  CHECK(flowed);
  c = pub.counts();
  CHECK(c.published == next_seq);
  CHECK(c.batches == (c.published - c.resyncs) + c.dropped_queue_full + c.dropped_subscriber_full);
}

TEST_CASE("The replay socket sends the kept batches from a sequence number on, then -1", "[kv_events]") {
  zmq::context_t context(1);
  zmq::socket_t sub(context, zmq::socket_type::sub);
  KVEventsConfig config = inproc_config("replayed");
  config.replay_endpoint = "inproc://replay";
  config.buffer_steps = 3;
  sub.set(zmq::sockopt::subscribe, "");
  KVEventsPublisher pub(config, KVEventStamp{}, &context, false);
  sub.connect(config.endpoint);
  const uint64_t base = handshake(pub, sub, config.topic);
  for (uint64_t h = 1; h <= 5; ++h) {
    pub.publish(stored(h));
    pub.run_once(std::chrono::milliseconds(0));
  }
  drain(sub, config.topic);
  zmq::socket_t dealer(context, zmq::socket_type::dealer);  // vLLM's subscriber example uses REQ; a DEALER reads every reply
  dealer.connect(config.replay_endpoint);
  const uint64_t start = base + 3;  // the last 2 of the 3 kept
  std::string start_bytes(8, '\0');
  for (int i = 0; i < 8; ++i) start_bytes[size_t(i)] = char(start >> (56 - 8 * i));
  dealer.send(zmq::buffer(std::string()), zmq::send_flags::sndmore);
  dealer.send(zmq::buffer(start_bytes), zmq::send_flags::none);
  std::vector<uint64_t> seqs, hashes;
  // Bounded by time, not by a count of polls: a slow machine only waits longer.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    pub.run_once(std::chrono::milliseconds(0));
    std::vector<zmq::message_t> frames;
    if (!zmq::recv_multipart(dealer, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    REQUIRE(frames.size() == 3);  // "", seq, payload
    const uint64_t seq = from_big_endian(frames[1]);
    if (seq == ~uint64_t(0)) {
      CHECK(frames[2].size() == 0);
      break;
    }
    seqs.push_back(seq);
    const std::vector<zmq::message_t> message = [&] {
      std::vector<zmq::message_t> m;
      m.emplace_back(config.topic.data(), config.topic.size());
      m.push_back(std::move(frames[1]));
      m.push_back(std::move(frames[2]));
      return m;
    }();
    hashes.push_back(decode(message, config.topic).first_hash);
  }
  CHECK(seqs == std::vector<uint64_t>{base + 3, base + 4});
  CHECK(hashes == std::vector<uint64_t>{4, 5});
}

TEST_CASE("--kv-events-config reads vLLM's KVEventsConfig fields", "[kv_events]") {
  const KVEventsConfig d = parse_kv_events_config("{}");
  CHECK_FALSE(d.publishing());
  CHECK(d.endpoint == "tcp://*:5557");
  CHECK(d.buffer_steps == 10000);
  CHECK(d.hwm == 100000);
  CHECK(d.max_queue_size == 100000);
  CHECK(d.topic.empty());
  CHECK(d.replay_endpoint.empty());
  const KVEventsConfig c = parse_kv_events_config(
      R"({"enable_kv_cache_events": true, "endpoint": "tcp://epp:5557", "replay_endpoint": "tcp://*:5558",
          "topic": "kv@10.0.0.7@m", "hwm": 7, "buffer_steps": 8, "max_queue_size": 9, "publisher": null})");
  CHECK(c.publishing());  // publisher unset: zmq when enabled, as vLLM
  CHECK(c.endpoint == "tcp://epp:5557");
  CHECK(c.replay_endpoint == "tcp://*:5558");
  CHECK(c.topic == "kv@10.0.0.7@m");
  CHECK((c.hwm == 7 && c.buffer_steps == 8 && c.max_queue_size == 9));
  CHECK_FALSE(parse_kv_events_config(R"({"enable_kv_cache_events": true, "publisher": "null"})").publishing());
  CHECK(d.sndbuf == 0);  // AstrAI's own field: the system's send buffer unless asked
  CHECK(parse_kv_events_config(R"({"sndbuf": 4096})").sndbuf == 4096);
  CHECK_THROWS_AS(parse_kv_events_config(R"({"sndbuf": 0})"), std::invalid_argument);
  for (const char* bad : {R"({"endpiont": "tcp://*:1"})", R"({"hwm": 0})", R"({"hwm": "5"})",
                          R"({"publisher": "kafka"})", R"({"endpoint": "localhost:5557"})", "[]", "{"})
    CHECK_THROWS_AS(parse_kv_events_config(bad), std::invalid_argument);
  CHECK_THROWS_WITH(parse_kv_events_config(R"({"endpiont": "x"})"), Catch::Contains("'endpiont'"));
  // vLLM's bind-or-connect rule for the PUB socket.
  CHECK(endpoint_binds("tcp://*:5557"));
  CHECK(endpoint_binds("tcp://[::]:5557"));
  CHECK(endpoint_binds("ipc:///tmp/kv"));
  CHECK(endpoint_binds("inproc://kv"));
  CHECK_FALSE(endpoint_binds("tcp://127.0.0.1:5557"));
  CHECK_FALSE(endpoint_binds("tcp://epp.ns.svc:5557"));
}
