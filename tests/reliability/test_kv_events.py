#!/usr/bin/env python3
"""KV cache events of a real `astrai serve --kv-events-config ...` (paged
cache, few pages: prompts sharing prefixes evict each other), read by a
subscriber written here with Debian's python3-zmq and python3-msgpack, which
decodes vLLM's wire format: three frames [topic, 8-byte big-endian sequence
number, msgpack [ts, [event maps], data_parallel_rank]].

Usage: test_kv_events.py ASTRAI SOURCE_ROOT [--requests 120]

(--requests: the requests of a load round; the sanitizer build runs 40, a
third of the work, which still evicts hundreds of blocks and drops batches:
both premises are checked whatever the count.)

1. A subscriber that keeps up (PUB bound on ipc://, vLLM's default way):
   every message well formed (field names and types, block_size, medium,
   token_ids the blocks' tokens); sequence numbers without a gap; blocks
   removed (the premise: evictions happened); no batch dropped; and the
   blocks rebuilt from the events equal, hash for hash with parent and
   tokens, what the cache holds (GET /debug/kv_blocks). The replay socket
   then sends the history from sequence 0, which rebuilds the same blocks.
   /metrics and /stats count the same batches.
2. A subscriber that sleeps through the load (the server's PUB connects to
   it, llm-d's way; high-water marks of 1): every request still completes,
   batches are dropped (the premise) and counted; once it reads, it gets
   every message ZeroMQ accepted with no sequence gap, and its blocks are a
   subset of the cache's (the resync after a loss clears what it knew).
Nothing here depends on speed: waits are for events, with hang guards.
Prints 'N passed, N failed' last.
"""
import json
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
from missing_data import debian_import, missing  # noqa: E402
from server_process import Results, ServerProcess, chat, chat_body, make_model, request, scratch_dir, wait_idle

msgpack = debian_import("msgpack")
zmq = debian_import("zmq")
if msgpack is None or zmq is None:
    msgpack = zmq = None

TOPIC = "kv@test@stories"
HANG = 120  # seconds: a hang guard, never a speed claim
STORED_KEYS = ["type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
               "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind"]


class Subscriber:
    """Reads messages and rebuilds the blocks: {hash: (parent, tokens)}."""

    def __init__(self, context, block_size, strict=True):
        """strict: a BlockRemoved must name a block it knows. Not so after a
        resync, which clears what it knew of blocks the cache still holds
        (and may evict later)."""
        self.strict = strict
        self.sock = context.socket(zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"kv@")
        self.block_size = block_size
        self.blocks = {}
        self.seqs = []
        self.removed = 0
        self.cleared = 0
        self.errors = []

    def apply(self, payload):
        batch = msgpack.unpackb(payload, raw=False)
        if not (isinstance(batch, list) and len(batch) == 3 and isinstance(batch[0], float)
                and isinstance(batch[1], list) and batch[2] == 0):
            self.errors.append(f"batch {batch!r:.200}")
            return
        for e in batch[1]:
            kind = e.get("type") if isinstance(e, dict) else None
            if kind == "BlockStored":
                hashes, tokens = e["block_hashes"], e["token_ids"]
                ok = (list(e) == STORED_KEYS and e["block_size"] == self.block_size and e["medium"] == "CPU"
                      and e["lora_id"] is None and e["lora_name"] is None and e["group_idx"] == 0
                      and e["extra_keys"] == [None] * len(hashes) and e["kv_cache_spec_kind"] == "full_attention"
                      and len(tokens) == self.block_size * len(hashes) and hashes
                      and all(isinstance(h, int) and 0 <= h < 2 ** 64 for h in hashes))
                if not ok:
                    self.errors.append(f"BlockStored {e!r:.300}")
                    continue
                parent = e["parent_block_hash"]
                for i, h in enumerate(hashes):
                    if h in self.blocks:
                        self.errors.append(f"block {h} stored twice")
                    self.blocks[h] = (parent, tokens[i * self.block_size:(i + 1) * self.block_size])
                    parent = h
            elif kind == "BlockRemoved":
                if list(e) != ["type", "block_hashes", "medium", "group_idx"]:
                    self.errors.append(f"BlockRemoved {e!r:.300}")
                for h in e["block_hashes"]:
                    self.removed += 1
                    if self.blocks.pop(h, None) is None and self.strict:
                        self.errors.append(f"block {h} removed but never stored")
            elif kind == "AllBlocksCleared" and list(e) == ["type"]:
                self.cleared += 1
                self.blocks.clear()
            else:
                self.errors.append(f"event {e!r:.200}")

    def receive(self, timeout_ms):
        """One message, or False when none came within timeout_ms."""
        if not self.sock.poll(timeout_ms):
            return False
        topic, seq, payload = self.sock.recv_multipart()
        if topic != TOPIC.encode() or len(seq) != 8:
            self.errors.append(f"frames {topic!r} {seq!r}")
        self.seqs.append(int.from_bytes(seq, "big"))
        self.apply(payload)
        return True

    def read_until(self, last_seq):
        """Reads until the message numbered last_seq (a hang guard bounds it)."""
        deadline = time.monotonic() + HANG
        while (not self.seqs or self.seqs[-1] < last_seq) and time.monotonic() < deadline:
            self.receive(200)
        return bool(self.seqs) and self.seqs[-1] >= last_seq


def kv_stats(port):
    _, _, body = request(port, "GET", "/stats")
    return json.loads(body)["kv_events"]


def cache_blocks(port):
    status, _, body = request(port, "GET", "/debug/kv_blocks")
    reply = json.loads(body)
    return status, reply["block_size"], {b["block_hash"]: (b["parent_block_hash"], b["token_ids"])
                                         for b in reply["blocks"]}


def settled(port):
    """Every batch handed over has been sent or counted as dropped. GET
    /debug/kv_blocks first: it runs on the scheduler's thread after the last
    step, whose events are queued by then."""
    cache_blocks(port)
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        k = kv_stats(port)
        if k["queued"] == 0 and k["batches"] == (k["published"] - k["resyncs"] + k["dropped_queue_full"]
                                                 + k["dropped_subscriber_full"]):
            return k
        time.sleep(0.05)
    return None


def prime(port, subscriber):
    """A subscription reaches a PUB socket some time after it is made; until
    then what is sent matches no one. Sends requests until the subscriber
    hears one message (an event, not a delay), then resets the prefix cache,
    whose AllBlocksCleared makes the subscriber's view exact from there on."""
    deadline = time.monotonic() + HANG
    n = 0
    while not subscriber.seqs and time.monotonic() < deadline:
        chat(port, "openai", chat_body("openai", f"Priming request number {n} with a few pages of text.", 2))
        n += 1
        subscriber.receive(50)
    status, _, _ = request(port, "POST", "/reset_prefix_cache")
    return bool(subscriber.seqs) and status == 200


STEMS = ["You are a helpful assistant who answers questions about the weather in short sentences. ",
         "Once upon a time there was a little girl who lived in a village near the forest with her mother. ",
         "The following is a transcript of a meeting about the budget of the town library for next year. "]


REQUESTS = int(dict(zip(sys.argv[3::2], sys.argv[4::2])).get("--requests", 120))


def load(port, n_requests=REQUESTS):
    """Requests sharing prefixes (three stems, then a varying tail), eight at
    a time. Returns the replies."""
    def one(i):
        prompt = STEMS[i % 3] * (1 + i % 4) + f"Question {i}: what happened next in part {i % 7}?"
        return chat(port, "openai", chat_body("openai", prompt, 8 + i % 24), timeout=HANG)
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(n_requests)))


def serve(astrai, model, config):
    return ServerProcess(astrai, model, "--cache", "paged", "--kv-cache-pages", "64", "--max-running", "8",
                         "--debug-routes", "--quiet", "--kv-events-config", json.dumps(config)).wait_ready()


def keeps_up(results, astrai, model, folder, context):
    config = {"enable_kv_cache_events": True, "endpoint": f"ipc://{folder}/events",
              "replay_endpoint": f"ipc://{folder}/replay", "topic": TOPIC}
    with serve(astrai, model, config) as server:
        port = server.port
        _, block_size, _ = cache_blocks(port)
        sub = Subscriber(context, block_size)
        sub.sock.connect(config["endpoint"])
        stop = threading.Event()
        primed = prime(port, sub)
        results.check("keeps up: the subscription is live", primed, server.log())
        reader = threading.Thread(target=lambda: [sub.receive(100) for _ in iter(stop.is_set, True)], daemon=True)
        reader.start()
        replies = load(port)
        results.check("keeps up: every request answered 200", all(r.status == 200 for r in replies),
                      [r.status for r in replies if r.status != 200])
        idle, _ = wait_idle(port)
        k = settled(port)
        results.check("keeps up: every batch sent or counted", k is not None, kv_stats(port))
        print(f"       (keeps up: {k})", flush=True)
        stop.set()
        reader.join(HANG)
        got_all = sub.read_until(k["published"] - 1)
        results.check("keeps up: every published message received", got_all,
                      f"last seq {sub.seqs[-1] if sub.seqs else None}, published {k['published']}")
        first = sub.seqs[0]
        results.check("keeps up: no sequence gap", sub.seqs == list(range(first, first + len(sub.seqs))),
                      sub.seqs[:20])
        results.check("keeps up: nothing dropped, no resync",
                      k["dropped_queue_full"] == 0 and k["dropped_subscriber_full"] == 0 and k["resyncs"] == 0, k)
        results.check("keeps up: every message well formed", not sub.errors, sub.errors[:5])
        results.check("keeps up: blocks were evicted (the premise)", sub.removed > 0, sub.removed)
        print(f"       (keeps up: {sub.removed} blocks removed, {len(sub.blocks)} held at the end)", flush=True)
        status, _, held = cache_blocks(port)
        results.check("keeps up: the events rebuild the cache's blocks", status == 200 and sub.blocks == held,
                      f"{len(sub.blocks)} rebuilt, {len(held)} held, "
                      f"{len(set(sub.blocks) ^ set(held))} differ")
        # The replay socket, vLLM's protocol: [b"", start seq] in; [b"", seq, payload]... then seq -1.
        dealer = context.socket(zmq.DEALER)
        dealer.connect(config["replay_endpoint"])
        dealer.send_multipart([b"", (0).to_bytes(8, "big")])
        replayed = Subscriber(context, block_size)
        replay_seqs, deadline = [], time.monotonic() + HANG
        while time.monotonic() < deadline and dealer.poll(HANG * 1000):
            _, seq, payload = dealer.recv_multipart()
            if seq == (2 ** 64 - 1).to_bytes(8, "big"):
                break
            replay_seqs.append(int.from_bytes(seq, "big"))
            replayed.apply(payload)
        results.check("keeps up: the replay sends every message from 0",
                      replay_seqs == list(range(k["published"])), replay_seqs[:10])
        results.check("keeps up: the replayed history rebuilds the same blocks",
                      replayed.blocks == held and not replayed.errors, replayed.errors[:3])
        _, _, metrics = request(port, "GET", "/metrics")
        text = metrics.decode()
        results.check("keeps up: /metrics counts the same batches",
                      f"astrai_kv_events_published_total {k['published']}" in text
                      and f"astrai_kv_events_batches_total {k['batches']}" in text
                      and 'astrai_kv_events_dropped_total{reason="subscriber_full"} 0' in text
                      and f'astrai_cache_config_info{{block_size="{block_size}",num_gpu_blocks="64"}} 1' in text
                      and 'astrai_lora_requests_info{max_lora="0",running_lora_adapters="",waiting_lora_adapters=""}'
                      in text, text[-1500:])
        dealer.close(0)
        replayed.sock.close(0)
        sub.sock.close(0)
        results.check("keeps up: idle afterwards", idle)
        results.check("keeps up: the server exits 0", server.stop() == 0, server.log()[-2000:])


def sleeps(results, astrai, model, context):
    sub = Subscriber(context, 16, strict=False)
    sub.sock.setsockopt(zmq.RCVHWM, 1)
    sub.sock.setsockopt(zmq.RCVBUF, 4096)  # little kernel buffering either: the load fills it
    port_for_events = sub.sock.bind_to_random_port("tcp://127.0.0.1")
    # A fixed address: the server connects to the subscriber (vLLM's rule), as to llm-d's endpoint picker.
    # sndbuf: the server's kernel send buffer fixed small (Linux would grow it
    # to 4 MB), so that what the sleeping subscriber's connection absorbs is
    # a few KB whatever the machine's speed: a first version without it
    # dropped nothing under the sanitizer build, whose slower publisher the
    # growing buffer kept up with.
    config = {"enable_kv_cache_events": True, "endpoint": f"tcp://127.0.0.1:{port_for_events}", "hwm": 1,
              "sndbuf": 4096, "topic": TOPIC}
    with serve(astrai, model, config) as server:
        port = server.port
        results.check("sleeps: the subscription is live", prime(port, sub), server.log())
        # The subscriber reads nothing meanwhile. How much the kernel's socket
        # buffers absorb before the publisher's queue is full depends on the
        # machine (a slow sanitizer build's first round once fit in them), so
        # the load goes on, a round at a time, until batches are dropped: a
        # subscriber that never reads fills any finite buffer. The rounds cap
        # only guards against a publisher that never reports a drop.
        replies = []
        for rounds in range(1, 21):
            replies += load(port)
            idle, _ = wait_idle(port)
            k = settled(port)
            if not idle or k is None or k["dropped_subscriber_full"] > 0:
                break
        print(f"       (sleeps: {rounds} round(s) of {REQUESTS} requests)", flush=True)
        results.check("sleeps: every request still completes",
                      all(r.status == 200 and r.completion_tokens > 0 for r in replies),
                      [r.status for r in replies if r.status != 200])
        results.check("sleeps: the engine is idle afterwards", idle)
        results.check("sleeps: every batch sent or counted", k is not None, kv_stats(port))
        print(f"       (sleeps: {k})", flush=True)
        results.check("sleeps: batches were dropped for the sleeping subscriber (the premise)",
                      k["dropped_subscriber_full"] > 0, k)
        # Now it reads: every accepted message arrives, the pending resync last.
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline:
            sub.receive(100)
            k = kv_stats(port)
            if not k["resync_pending"] and sub.seqs and sub.seqs[-1] == k["published"] - 1:
                break
        first = sub.seqs[0]
        results.check("sleeps: every accepted message received, no sequence gap",
                      sub.seqs == list(range(first, k["published"])), (sub.seqs[:10], k))
        results.check("sleeps: a resync followed the losses", k["resyncs"] >= 1 and sub.cleared >= 2, (k, sub.cleared))
        results.check("sleeps: every message well formed", not sub.errors, sub.errors[:5])
        _, _, held = cache_blocks(port)
        results.check("sleeps: the subscriber's blocks are a subset of the cache's",
                      all(held.get(h) == v for h, v in sub.blocks.items()),
                      [h for h, v in sub.blocks.items() if held.get(h) != v][:5])
        results.check("sleeps: the server exits 0", server.stop() == 0, server.log()[-2000:])
    sub.sock.close(0)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    astrai = sys.argv[1]
    if zmq is None or msgpack is None:
        return 1 if missing("python3-zmq and python3-msgpack (Debian) are needed to read the KV events") else 0
    results = Results()
    folder = scratch_dir("astrai-kv-events-")
    model = make_model(astrai, folder)
    context = zmq.Context()
    try:
        keeps_up(results, astrai, model, folder, context)
        sleeps(results, astrai, model, context)
    finally:
        context.term()
    return results.finish()


if __name__ == "__main__":
    sys.exit(main())
