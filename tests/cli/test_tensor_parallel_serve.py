#!/usr/bin/env python3
"""`astrai serve --tensor-parallel 2` on the emulated CUDA device, as a user
runs it (docs/tensor-parallel.md): the server starts its second rank itself
(an `astrai rank-worker` child), answers chat requests, reports the group in
/stats, and shuts both ranks down on SIGTERM. A rank that dies takes the
server down with a clear error and never a hang: killed while idle, or while
a request is streaming (its step then waits in an all-reduce for a rank that
is gone), the server exits with status 70 naming the rank and how it ended;
killed itself, the server's rank takes no orphan along (its child dies with
it). The waits below only guard against hangs: a correct server passes them
in a few seconds, and no outcome depends on the machine's speed.

Usage: test_tensor_parallel_serve.py PATH/TO/astrai SOURCE_ROOT
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(sys.argv[2], "tests", "reliability"))
from server_process import ServerProcess, Results, chat_body, make_model, request, scratch_dir, stats  # noqa: E402

ASTRAI = sys.argv[1]
HANG_GUARD = 120  # seconds: far beyond what any of these takes, only so that a hang fails instead of blocking CI
results = Results()
check = results.check


def children(pid):
    """Child process ids of `pid` (every thread's children)."""
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return out


def rank_workers(pid):
    found = []
    for child in children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"rank-worker" in f.read():
                    found.append(child)
        except OSError:
            pass
    return found


def alive(pid):
    """Running and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid, timeout):
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def cmdlines(pids):
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                out[pid] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError as e:
            out[pid] = f"({e})"
    return out


def start(model):
    server = ServerProcess(ASTRAI, model, "--backend", "cuda", "--cuda-dtype", "f32", "--tensor-parallel", "2",
                           "--quiet")
    server.wait_ready(timeout=HANG_GUARD)
    # The rank joined before the model counted as loaded, so it is there; its
    # /proc entries are read until they name it (a fresh CI run once read a
    # child whose cmdline did not yet say rank-worker), within the hang guard.
    deadline = time.monotonic() + HANG_GUARD
    workers = rank_workers(server.proc.pid)
    while len(workers) != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
        workers = rank_workers(server.proc.pid)
    check("the server started its second rank (one astrai rank-worker child)", len(workers) == 1,
          f"children {cmdlines(children(server.proc.pid))}")
    return server, workers[0] if workers else None


def main():
    model = make_model(ASTRAI, scratch_dir("astrai-tp-serve-"))

    # Serving, /stats, and a graceful stop of both ranks.
    server, worker = start(model)
    try:
        status, _, body = request(server.port, "POST", "/v1/chat/completions",
                                  chat_body("openai", "Once upon a time", 24), timeout=HANG_GUARD)
        answer = json.loads(body) if status == 200 else {}
        check("a chat completion on two ranks", status == 200 and answer["usage"]["completion_tokens"] > 0,
              body[:300])
        s = stats(server.port)
        check("/stats names the group's executor", s["memory"]["backend"] == "cuda-f32-tp2", s.get("memory"))
        check("/stats counts both ranks' weights", s["memory"]["weights_bytes"] > 0, s.get("memory"))
        check("the startup line describes both ranks", "weights on 2 ranks" in server.log(), server.log()[-800:])
        server.signal(signal.SIGTERM)
        code = server.wait_exit(HANG_GUARD)
        check("SIGTERM stops the server (exit 0)", code == 0, server.log()[-800:])
        check("... and its rank", worker is not None and wait_gone(worker, HANG_GUARD))
        check("... which ended with status 0 (it had rank 0's Shutdown)", "at shutdown" not in server.log(),
              server.log()[-800:])
    finally:
        server.stop()

    # A rank killed while the server is idle.
    server, worker = start(model)
    try:
        os.kill(worker, signal.SIGKILL)
        code = server.wait_exit(HANG_GUARD)
        log = server.log()
        check("a rank killed while idle takes the server down (exit 70)", code == 70, f"exit {code}: {log[-800:]}")
        check("... saying which rank and how it ended",
              f"tensor parallel: rank 1 (pid {worker}" in log and "killed by signal 9" in log, log[-800:])
    finally:
        server.stop()

    # A rank killed while a request streams: rank 0's step waits for it in an all-reduce.
    server, worker = start(model)
    try:
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=HANG_GUARD)
        conn.request("POST", "/v1/chat/completions",
                     body=json.dumps(chat_body("openai", "Once upon a time", 400, stream=True)),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        first = response.readline()
        check("the stream started", first.startswith(b"data: "), first)
        os.kill(worker, signal.SIGKILL)
        code = server.wait_exit(HANG_GUARD)
        log = server.log()
        check("a rank killed mid-request takes the server down (exit 70), no hang", code == 70,
              f"exit {code}: {log[-800:]}")
        check("... naming the rank", f"rank 1 (pid {worker}" in log, log[-800:])
        try:
            rest = response.read()
        except Exception:  # the connection was cut: that is the client's clear signal here
            rest = b""
        # Either the connection is cut when the server exits, or (when the
        # step's all-reduce saw the dead rank first) the request ends with an
        # error event: never a stream that finishes as if nothing happened.
        check("... and the client's stream ends, cut or with an error", rest == b"" or b'"error"' in rest, rest[-300:])
    finally:
        server.stop()

    # The server killed: its rank does not outlive it.
    server, worker = start(model)
    try:
        server.proc.kill()
        server.wait_exit(HANG_GUARD)
        check("a killed server leaves no rank behind", worker is not None and wait_gone(worker, HANG_GUARD))
    finally:
        server.stop()
    return results.finish()


if __name__ == "__main__":
    sys.exit(main())
