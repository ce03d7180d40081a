#include "engine/kv_cache/events/kv_events_publisher.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <iterator>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace astrai {

namespace {

std::string big_endian(uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 7; i >= 0; --i, value >>= 8) bytes[size_t(i)] = char(value & 0xff);
  return bytes;
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr auto kNoWait = zmq::send_flags::dontwait;
constexpr auto kMore = zmq::send_flags::dontwait | zmq::send_flags::sndmore;

}  // namespace

struct KVEventsPublisher::State {
  struct Batch {
    double ts;
    std::vector<KVCacheEvent> events;
    bool after_loss;  // batches were dropped just before this one
  };

  KVEventsConfig config;
  KVEventStamp stamp;
  std::unique_ptr<zmq::context_t> own_context;
  zmq::socket_t pub;
  std::optional<zmq::socket_t> replay;

  // Shared with the scheduler's thread.
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Batch> queue;
  bool loss_after_tail = false;  // the newest batch was dropped: a resync follows the queue's tail
  bool stopping = false;

  // The publisher's thread writes it alone; counts() reads it.
  std::atomic<bool> resync_due = false;
  uint64_t next_seq = 0;
  std::deque<std::pair<uint64_t, std::string>> sent;  // (seq, payload) for replay, oldest first
  std::thread thread;

  std::atomic<uint64_t> batches = 0, published = 0, dropped_queue_full = 0, dropped_subscriber_full = 0,
                        resyncs = 0, queued = 0;

  State(const KVEventsConfig& c, KVEventStamp s, zmq::context_t* context)
      : config(c),
        stamp(std::move(s)),
        own_context(context ? nullptr : std::make_unique<zmq::context_t>(1)),
        pub(context ? *context : *own_context, zmq::socket_type::pub) {
    pub.set(zmq::sockopt::sndhwm, config.hwm);
    if (config.sndbuf > 0) pub.set(zmq::sockopt::sndbuf, config.sndbuf);
    pub.set(zmq::sockopt::xpub_nodrop, 1);  // a full subscriber fails the send (counted) instead of losing it silently
    pub.set(zmq::sockopt::linger, 0);
    open(pub, config.endpoint, endpoint_binds(config.endpoint));
    if (!config.replay_endpoint.empty()) {
      replay.emplace(context ? *context : *own_context, zmq::socket_type::router);
      replay->set(zmq::sockopt::linger, 0);
      open(*replay, config.replay_endpoint, true);
    }
  }

  static void open(zmq::socket_t& socket, const std::string& endpoint, bool bind) {
    try {
      if (bind)
        socket.bind(endpoint);
      else
        socket.connect(endpoint);
    } catch (const zmq::error_t& e) {
      throw std::runtime_error("KV events: cannot " + std::string(bind ? "bind" : "connect to") + " " + endpoint +
                               ": " + e.what());
    }
  }

  // One message, or false when a subscriber is at its high-water mark. Only
  // the first frame can fail: ZeroMQ counts whole messages against the mark,
  // so once it takes the first frame it takes the rest.
  bool send(const std::string& payload) {
    if (!pub.send(zmq::buffer(config.topic), kMore)) return false;
    pub.send(zmq::buffer(big_endian(next_seq)), kMore);
    pub.send(zmq::buffer(payload), kNoWait);
    sent.emplace_back(next_seq, payload);
    if (sent.size() > size_t(config.buffer_steps)) sent.pop_front();
    published.store(++next_seq);
    return true;
  }

  // vLLM's replay protocol: a request [identity, "", start seq] gets every
  // kept message from that seq on as [identity, "", seq, payload], then
  // [identity, "", -1, ""].
  void answer_replays() {
    if (!replay) return;
    for (;;) {
      std::vector<zmq::message_t> frames;
      if (!zmq::recv_multipart(*replay, std::back_inserter(frames), zmq::recv_flags::dontwait)) return;
      if (frames.size() != 3 || frames[2].size() > 8) continue;  // not a replay request
      uint64_t start = 0;
      for (size_t i = 0; i < frames[2].size(); ++i) start = start << 8 | frames[2].data<uint8_t>()[i];
      const std::string identity = frames[0].to_string();
      for (const auto& [seq, payload] : sent) {
        if (seq < start) continue;
        replay->send(zmq::buffer(identity), kMore);
        replay->send(zmq::buffer(std::string()), kMore);
        replay->send(zmq::buffer(big_endian(seq)), kMore);
        replay->send(zmq::buffer(payload), kNoWait);
      }
      replay->send(zmq::buffer(identity), kMore);
      replay->send(zmq::buffer(std::string()), kMore);
      replay->send(zmq::buffer(big_endian(~uint64_t(0))), kMore);  // -1, as vLLM's END_SEQ
      replay->send(zmq::buffer(std::string()), kNoWait);
    }
  }

  void run_once(std::chrono::milliseconds wait) {
    std::optional<Batch> batch;
    {
      std::unique_lock lock(mutex);
      wake.wait_for(lock, wait, [&] { return stopping || !queue.empty(); });
      if (!queue.empty()) {
        batch = std::move(queue.front());
        queue.pop_front();
      } else if (loss_after_tail) {
        loss_after_tail = false;  // nothing came after the loss: resync now
        resync_due = true;
      }
      queued.store(queue.size());
    }
    answer_replays();
    if (batch && batch->after_loss) resync_due = true;
    if (resync_due && send(encode_kv_event_batch(unix_seconds(), {KVAllBlocksCleared{}}, stamp))) {
      resync_due = false;
      resyncs.fetch_add(1);
    }
    if (!batch) return;
    if (resync_due || !send(encode_kv_event_batch(batch->ts, batch->events, stamp))) {
      dropped_subscriber_full.fetch_add(1);  // a subscriber is at its high-water mark
      resync_due = true;
    }
  }

  void loop() {
    for (;;) {
      {
        std::lock_guard lock(mutex);
        if (stopping && queue.empty()) return;
      }
      run_once(std::chrono::milliseconds(100));  // the wake-up also retries a due resync and answers replays
    }
  }
};

KVEventsPublisher::KVEventsPublisher(const KVEventsConfig& config, KVEventStamp stamp, zmq::context_t* context,
                                     bool own_thread)
    : state_(std::make_unique<State>(config, std::move(stamp), context)) {
  if (own_thread) state_->thread = std::thread([this] { state_->loop(); });
}

KVEventsPublisher::~KVEventsPublisher() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
}

void KVEventsPublisher::publish(std::vector<KVCacheEvent> events) {
  State& s = *state_;
  const double ts = unix_seconds();
  {
    std::lock_guard lock(s.mutex);
    s.batches.fetch_add(1);
    if (s.queue.size() >= size_t(s.config.max_queue_size)) {
      s.dropped_queue_full.fetch_add(1);
      s.loss_after_tail = true;
      return;
    }
    s.queue.push_back({ts, std::move(events), std::exchange(s.loss_after_tail, false)});
    s.queued.store(s.queue.size());
  }
  s.wake.notify_one();
}

KVEventsPublisher::Counts KVEventsPublisher::counts() const {
  State& s = *state_;
  bool loss_queued = false;
  {
    std::lock_guard lock(s.mutex);
    loss_queued = s.loss_after_tail;
  }
  return {s.batches.load(), s.published.load(), s.dropped_queue_full.load(), s.dropped_subscriber_full.load(),
          s.resyncs.load(), s.queued.load(), s.resync_due.load() || loss_queued};
}

const KVEventStamp& KVEventsPublisher::stamp() const { return state_->stamp; }

void KVEventsPublisher::run_once(std::chrono::milliseconds wait) { state_->run_once(wait); }

}  // namespace astrai
