#!/usr/bin/env python3
"""Sustained load on a real `astrai serve` over loopback.

Usage: test_load.py ASTRAI SOURCE_ROOT [--clients 64] [--seconds 25] [--rounds 2]
                    [--cache paged|contiguous] [--seed 1] [--rss-tolerance 5]

A synthetic model (stories260K shape) is served. Before the load, a few fixed
requests run alone; their answers are the reference. Then, per round, every
client loops for --seconds, drawing at random: the protocol (OpenAI or
Anthropic), streamed or whole, a prompt of random words, max_tokens, greedy
or sampled (seeded or not), now and then a stop sequence, a request that must
fail (a prompt longer than the context: 400; a negative temperature: 422),
or a GET of /v1/models; and about a third of the time one of the fixed
requests, whose answer must equal its reference (the engine's output does not
depend on what else is in the batch). It checks:
  - every response is well-formed for its protocol, or the documented error;
  - no request hangs (a client timeout) and every client ends;
  - after each round /stats shows no running or queued task and no KV page or
    slot held, and counts exactly the tasks and tokens the clients received;
  - resident memory after the last round is within --rss-tolerance percent of
    after the first (each round replays the same request sequence).
Prints a summary table, then 'N passed, N failed'; exits non-zero on failure.
"""
import argparse
import collections
import random
import socket
import sys
import threading
import time

from server_process import (Malformed, Results, ServerProcess, chat, chat_body, make_model, request, scratch_dir,
                            wait_idle)

WORDS = ("once upon a time there was a little girl named lily she liked to play in the park with her dog "
         "one day the sun was shining and the birds sang happy songs tom found a big red ball under the old tree "
         "they laughed ran jumped and shared cake with mom dad friends").split()

CLIENT_TIMEOUT = 60  # seconds without a byte from the server: the request hangs

# Fixed requests, answered alone before the load: (prompt, max_tokens, temperature, seed).
FIXED = [
    ("Once upon a time", 48, 0.0, None),
    ("the little dog ran to the park and found a ball", 96, 0.0, None),
    ("lily", 7, 0.0, None),
    (" ".join(WORDS[:60]), 128, 0.0, None),
    ("tom and mom shared cake", 64, 0.8, 1234),
    ("the birds sang happy songs under the old tree", 120, 1.0, 99),
]


def fixed_body(protocol, case, stream):
    prompt, max_tokens, temperature, seed = case
    return chat_body(protocol, prompt, max_tokens, temperature, seed, stream)


class Tally:
    """What one round's clients saw, merged under a lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.kinds = collections.Counter()      # (protocol, stream) -> requests sent
        self.statuses = collections.Counter()   # outcome label -> count
        self.tokens = 0                         # completion tokens received
        self.tasks = 0                          # chat requests answered 200 (each one engine task)
        self.fixed_checked = 0
        self.failures = []

    def fail(self, message):
        with self.lock:
            self.statuses["FAILURE"] += 1
            if len(self.failures) < 20:
                self.failures.append(message)


def random_request(rng):
    """(description, protocol, body or None for GET /v1/models, expected status)."""
    protocol = rng.choice(("openai", "anthropic"))
    stream = rng.random() < 0.5
    roll = rng.random()
    if roll < 0.03:
        return "models", protocol, None, 200
    if roll < 0.06:  # the synthetic tokenizer makes about 3 tokens of a word: 400 words overflow 512
        prompt = " ".join(rng.choice(WORDS) for _ in range(400))
        return "too long", protocol, chat_body(protocol, prompt, 8, 0.0, None, stream), 400
    if roll < 0.08:
        return "bad temperature", protocol, chat_body(protocol, "hi", 8, -1.0, None, stream), 422
    if roll < 0.40:
        case = rng.randrange(len(FIXED))
        return ("fixed", case), protocol, fixed_body(protocol, FIXED[case], stream), 200
    prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 80)))
    temperature = 0.0 if rng.random() < 0.5 else rng.choice((0.5, 0.8, 1.0, 1.3))
    seed = rng.randrange(1 << 30) if temperature > 0 and rng.random() < 0.5 else None
    body = chat_body(protocol, prompt, rng.randint(1, 128), temperature, seed, stream)
    if rng.random() < 0.1:
        body["stop" if protocol == "openai" else "stop_sequences"] = [rng.choice(("a", "b", " the", "e"))]
    return "random", protocol, body, 200


def client(port, rng, deadline, tally, references):
    while time.monotonic() < deadline:
        what, protocol, body, expected = random_request(rng)
        stream = bool(body and body.get("stream"))
        with tally.lock:
            tally.kinds["GET /v1/models" if body is None else f"{protocol} {'stream' if stream else 'whole'}"] += 1
        try:
            if body is None:
                status, _, raw = request(port, "GET", "/v1/models", timeout=CLIENT_TIMEOUT)
                ok = status == 200 and b'"object":"list"' in raw
                if not ok:
                    tally.fail(f"GET /v1/models: {status} {raw[:200]!r}")
                    continue
                with tally.lock:
                    tally.statuses["200 models"] += 1
                continue
            reply = chat(port, protocol, body, timeout=CLIENT_TIMEOUT)
        except Malformed as e:
            tally.fail(f"{protocol} stream={stream} {what}: malformed: {e}")
            continue
        except socket.timeout:
            tally.fail(f"{protocol} stream={stream} {what}: no answer within {CLIENT_TIMEOUT} s (hang)")
            continue
        except OSError as e:
            tally.fail(f"{protocol} stream={stream} {what}: connection error {e!r}")
            continue
        if reply.status == 200:  # an engine task ran: /stats counts it whatever the checks below say
            with tally.lock:
                tally.tasks += 1
                tally.tokens += reply.completion_tokens or 0
        if reply.status != expected or reply.stream_error:
            tally.fail(f"{protocol} stream={stream} {what}: status {reply.status} (expected {expected}), "
                       f"stream error {reply.stream_error}, {reply.error!r}"[:600])
            continue
        if expected != 200:
            with tally.lock:
                tally.statuses[f"{expected} {what} (expected)"] += 1
            continue
        if isinstance(what, tuple):
            want = references[what[1]]
            got = (reply.text, reply.finish in ("stop", "end_turn"), reply.prompt_tokens, reply.completion_tokens)
            if got != want:
                tally.fail(f"fixed request {what[1]} ({protocol}, stream={stream}) under load gave "
                           f"{got[1:]} {got[0][:80]!r}, alone {want[1:]} {want[0][:80]!r}")
                continue
        with tally.lock:
            tally.statuses["200 chat"] += 1
            tally.fixed_checked += isinstance(what, tuple)


def compute_references(port, results):
    """Each fixed request alone, once per protocol and form: one answer each
    (text, whether it ended by itself, prompt and completion tokens)."""
    references = []
    for i, case in enumerate(FIXED):
        answers = {}
        for protocol in ("openai", "anthropic"):
            for stream in (False, True):
                reply = chat(port, protocol, fixed_body(protocol, case, stream), timeout=CLIENT_TIMEOUT)
                answers[(protocol, stream)] = None if reply.status != 200 or reply.stream_error else \
                    (reply.text, reply.finish in ("stop", "end_turn"), reply.prompt_tokens, reply.completion_tokens)
        first = answers[("openai", False)]
        results.check(f"fixed request {i} alone: both protocols, streamed and whole, give one answer",
                      first is not None and len(set(answers.values())) == 1, repr(answers)[:800])
        references.append(first)
    return references


def run_round(port, args, references):
    tally = Tally()
    deadline = time.monotonic() + args.seconds
    threads = []
    for c in range(args.clients):
        # Every round replays the same request sequences (seeds per client, not per round).
        rng = random.Random(args.seed * 100003 + c)
        threads.append(threading.Thread(target=client, args=(port, rng, deadline, tally, references), daemon=True))
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1.0, deadline - time.monotonic() + CLIENT_TIMEOUT + 10))
    elapsed = time.monotonic() - start
    stuck = sum(t.is_alive() for t in threads)
    return tally, elapsed, stuck


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("astrai")
    parser.add_argument("source_root")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=25)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cache", default="paged", choices=("paged", "contiguous"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rss-tolerance", type=float, default=5.0, help="percent")
    args = parser.parse_args()
    results = Results()
    scratch = scratch_dir("astrai-load-")
    model = make_model(args.astrai, scratch)

    # --threads: one worker per client plus a few for /stats and /health.
    server = ServerProcess(args.astrai, model, "--cache", args.cache, "--threads", args.clients + 8, "--quiet")
    rows = []
    try:
        server.wait_ready()
        port = server.port
        print(f"server on port {port}: {args.clients} clients, {args.rounds} rounds of {args.seconds:g} s, "
              f"cache {args.cache}, start RSS {server.rss_kib()} KiB", flush=True)
        references = compute_references(server.port, results)
        for r in range(1, args.rounds + 1):
            # /stats is published after each scheduler step: a figure read just
            # after a response may miss that response's last token until idle.
            _, before = wait_idle(port)
            tally, elapsed, stuck = run_round(port, args, references)
            results.check(f"round {r}: every client ended (none hung)", stuck == 0, f"{stuck} clients still waiting")
            for failure in tally.failures:
                print("       " + failure)
            results.check(f"round {r}: every response well-formed or the documented error, fixed requests "
                          f"equal to their answer alone", tally.statuses["FAILURE"] == 0,
                          f"{tally.statuses['FAILURE']} failures (first ones above)")
            is_idle, after = wait_idle(port)
            results.check(f"round {r}: /stats back to no task, no queue, no KV block held", is_idle, after)
            tasks = after["total_tasks"] - before["total_tasks"]
            tokens = after["total_tokens"] - before["total_tokens"]
            results.check(f"round {r}: /stats counted the {tally.tasks} tasks and {tally.tokens} tokens received",
                          (tasks, tokens) == (tally.tasks, tally.tokens), f"stats: {tasks} tasks, {tokens} tokens")
            results.check(f"round {r}: the fixed requests ran under load", tally.fixed_checked > 0)
            rss = server.rss_kib()
            rows.append((r, tally, elapsed, rss, after))
            print(f"round {r}: {sum(tally.kinds.values())} requests in {elapsed:.1f} s, RSS {rss} KiB", flush=True)
        if len(rows) >= 2:
            first, last = rows[0][3], rows[-1][3]
            growth = 100.0 * (last - first) / first
            results.check(f"RSS after round {len(rows)} within {args.rss_tolerance:g}% of after round 1 "
                          f"({first} -> {last} KiB, {growth:+.1f}%)", abs(growth) <= args.rss_tolerance)
        results.check("the server is still running", server.proc.poll() is None, server.log()[-2000:])
    except Exception as e:  # a dead server or unreadable /stats: report, never hang
        results.check("the load test ran to its end", False, f"{e!r}\n{server.log()[-2000:]}")
    finally:
        code = server.stop()
    results.check("the server exits 0 on SIGTERM after the load", code == 0, f"exit status {code}")
    print_summary(rows)
    return results.finish()


def print_summary(rows):
    if not rows:
        return
    print("\nround | requests | req/s | tokens | tok/s | RSS KiB | preemptions")
    for r, tally, elapsed, rss, after in rows:
        n = sum(tally.kinds.values())
        print(f"{r:5} | {n:8} | {n / elapsed:5.1f} | {tally.tokens:6} | {tally.tokens / elapsed:5.0f} | {rss:7} | "
              f"{after['preemptions']}")
    kinds = sorted(set().union(*(t.kinds for _, t, *_ in rows)))
    print("\nrequests by kind: " + "; ".join(
        f"{k} " + "/".join(str(t.kinds[k]) for _, t, *_ in rows) for k in kinds))
    statuses = sorted(set().union(*(t.statuses for _, t, *_ in rows)))
    print("responses by outcome: " + "; ".join(
        f"{s} " + "/".join(str(t.statuses[s]) for _, t, *_ in rows) for s in statuses))
    print("fixed requests under load, equal to their answer alone: " + "/".join(str(t.fixed_checked)
                                                                             for _, t, *_ in rows))
    print("(figures per round, separated by /)\n")


if __name__ == "__main__":
    sys.exit(main())
