// KV cache events over ZeroMQ, as vLLM's ZmqEventPublisher sends them
// (docs/server.md, "KV cache events"): a PUB socket, every message three
// frames [topic, 8-byte big-endian sequence number, msgpack KVEventBatch]
// (kv_event_encoding.h); optionally a ROUTER socket that replays the last
// buffer_steps messages to a subscriber that saw a gap.
//
// The scheduler's thread only queues (publish() never blocks); a thread of
// the publisher's own encodes and sends. Nothing a subscriber does can stall
// the engine:
//   - a full queue (max_queue_size batches) drops the batch;
//   - the PUB socket sends without waiting, with ZMQ_XPUB_NODROP so that a
//     subscriber at its high-water mark (hwm) makes the send fail visibly
//     rather than vanish: the batch is dropped and counted.
// After a loss the next message is an AllBlocksCleared batch (a resync): a
// subscriber then forgets this cache's blocks and learns them again as they
// are stored, so its view is a subset of the cache's and never names a block
// that is gone. Sequence numbers count the messages ZeroMQ accepted, so a
// subscriber that stays connected sees no gap; a gap means it lost messages
// itself (a reconnect), which the replay socket fills.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kv_cache/kv_events.h"
#include "engine/kv_cache/events/kv_event_encoding.h"
#include "engine/kv_cache/events/kv_events_config.h"

namespace zmq {
class context_t;
}

namespace astrai {

class KVEventsPublisher final : public KVEventSink {
 public:
  struct Counts {
    uint64_t batches = 0;                  // handed over by the scheduler
    uint64_t published = 0;                // messages ZeroMQ accepted, resyncs included: the next sequence number
    uint64_t dropped_queue_full = 0;       // batches the full queue refused
    uint64_t dropped_subscriber_full = 0;  // batches not sent because a subscriber was at its high-water mark
    uint64_t resyncs = 0;                  // AllBlocksCleared batches sent after a loss
    uint64_t queued = 0;                   // waiting for the publisher's thread now
    bool resync_pending = false;           // a loss not yet followed by a resync (a subscriber is still full)
  };

  // Binds or connects the PUB socket (endpoint_binds), binds the replay
  // socket, and starts the thread. Throws std::runtime_error naming the
  // endpoint when ZeroMQ refuses it. `context`: the ZeroMQ context to use
  // (tests: inproc:// endpoints need the subscriber's); null makes one.
  // `own_thread` false: no thread, the caller runs run_once() (tests).
  KVEventsPublisher(const KVEventsConfig& config, KVEventStamp stamp, zmq::context_t* context = nullptr,
                    bool own_thread = true);
  // Sends what is queued (without waiting on subscribers), then closes.
  ~KVEventsPublisher() override;
  KVEventsPublisher(const KVEventsPublisher&) = delete;
  KVEventsPublisher& operator=(const KVEventsPublisher&) = delete;

  void publish(std::vector<KVCacheEvent> events) override;
  Counts counts() const;
  const KVEventStamp& stamp() const;

  // One round of the thread's loop: waits up to `wait` for a batch, answers
  // replay requests, sends a resync if one is due, then the batch.
  void run_once(std::chrono::milliseconds wait);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace astrai
