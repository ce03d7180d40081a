#!/usr/bin/env python3
"""Graceful shutdown of a real `astrai serve` on SIGTERM and SIGINT.

Usage: test_shutdown.py ASTRAI SOURCE_ROOT

Each case starts a server, puts requests in flight (OpenAI and Anthropic,
streamed and whole), waits until the engine holds all of them, and signals:
  - the listener stops at once: a new connection, made once the server has
    logged that it is stopping and while the requests in flight still run,
    is refused or gets no service;
  - with a grace period long enough, every request in flight (queued ones
    too) finishes with 200 and its whole body, and the process exits 0
    without waiting out the grace period;
  - with no grace period and long requests, whole requests end with 503
    (the protocol's 'unavailable' error) and streams with the protocol's
    error event; none hangs, and the process exits 0;
  - an idle server, and one with silent clients connected, exit 0 without
    waiting out the grace period or the silent clients' timeouts.
Prints 'N passed, N failed' last; exits non-zero on failure.

No check depends on the machine's speed (docs/testing.md): the grace
periods and connection timeouts that must not be waited out are GRACE (60 s)
long, and an exit before one ends proves it was not waited out; the cases
whose requests must not finish have a grace of 0; every other wait is a hang
guard. The times are printed, not compared.
"""
import signal
import sys
import threading
import time

from server_process import (Malformed, Results, ServerProcess, chat, chat_body, connect, make_model, read_until_closed,
                            scratch_dir, stats)

GRACE = 60  # a grace period (or connection timeout) that the server must not wait out
HANG = 120  # a wait for the server's exit past which it has hung
KINDS = [("openai", False), ("openai", True), ("anthropic", False), ("anthropic", True)]


def new_connection_refused(port):
    """After the signal: a connection is refused, or accepted and closed with
    no answer, or answered 503. Returns (ok, what happened)."""
    try:
        sock = connect(port, timeout=30)
    except ConnectionRefusedError:
        return True, "refused"
    except OSError as e:
        return True, f"failed: {e!r}"
    try:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        raw, how, _, _ = read_until_closed(sock, 30)
    except OSError as e:
        return True, f"failed: {e!r}"
    finally:
        sock.close()
    if raw == b"" and how != "timeout":
        return True, f"accepted, then {how} without an answer"
    return raw.startswith(b"HTTP/1.1 503"), f"answered {raw[:60]!r} ({how})"


def in_flight(server, n_requests, max_tokens):
    """Starts n requests (cycling through KINDS) and waits until the engine
    holds them all (running or queued). Returns (threads, replies list)."""
    replies = [None] * n_requests
    finished_at = [None] * n_requests

    def send(i):
        protocol, stream = KINDS[i % len(KINDS)]
        body = chat_body(protocol, "Once upon a time", max_tokens, 0.0, stream=stream, ignore_eos=True)
        try:
            replies[i] = chat(server.port, protocol, body, timeout=60)
        except (OSError, Malformed) as e:
            replies[i] = e
        finished_at[i] = time.monotonic()

    threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(n_requests)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        s = stats(server.port)
        if s["active_tasks"] + s["waiting_queue"] >= n_requests:
            break
        time.sleep(0.01)
    return threads, replies, finished_at


def describe(reply):
    if isinstance(reply, Exception) or reply is None:
        return repr(reply)
    return f"{reply.status} tokens={reply.completion_tokens} stream_error={reply.stream_error} {reply.error}"


def unavailable(reply):
    """A 503 in the protocol's 'unavailable' shape, or a stream ended by an error event."""
    if isinstance(reply, Exception) or reply is None:
        return False
    if reply.status == 200:
        return reply.stream_error
    err = (reply.error or {}).get("error", {})
    return reply.status == 503 and (err.get("code") == "service_unavailable" or err.get("type") == "api_error")


def wait_for_log(server, text, timeout=HANG):
    """Waits until the server's log holds `text`; whether it came."""
    deadline = time.monotonic() + timeout
    while text not in server.log():
        if time.monotonic() > deadline or server.proc.poll() is not None:
            return text in server.log()
        time.sleep(0.01)
    return True


def case_requests_finish(results, astrai, model, signum, name):
    """Generous grace: 6 requests of 300 tokens (2 of them queued behind
    --max-running 4) all finish with 200."""
    grace = GRACE
    with ServerProcess(astrai, model, "--shutdown-grace", grace, "--max-running", 4) as server:
        server.wait_ready()
        threads, replies, finished_at = in_flight(server, 6, 300)
        signalled = time.monotonic()
        server.signal(signum)
        # The server logs "stopping" just before it stops accepting: once it
        # has, a new connection gets no service. Tried until one does not
        # while the requests still run (the first try is the usual answer:
        # a try can fall between the log line and the listener's close).
        logged = wait_for_log(server, "astrai serve: stopping")
        refused, how, tries, refused_by = False, "no try", 0, None
        while logged and not refused and not any(finished_at) and server.proc.poll() is None:
            refused, how = new_connection_refused(server.port)
            tries += 1
            refused_by = time.monotonic()
        first_end = min((t for t in finished_at if t is not None), default=float("inf"))
        running = refused_by is not None and refused_by < first_end
        results.check(f"{name}: a new connection after the signal gets no service while the requests still run "
                      f"({how}; {tries} tries)", logged and refused and running,
                      f"logged {logged}, requests still running {running}")
        code = server.wait_exit(grace + HANG)
        exited = time.monotonic()
        for t in threads:
            t.join(HANG)
        complete = [not isinstance(r, Exception) and r is not None and r.status == 200
                    and r.completion_tokens == 300 and not r.stream_error for r in replies]
        results.check(f"{name}, grace {grace} s: all 6 requests in flight (2 queued) finish with 200 and 300 tokens",
                      all(complete), [describe(r) for r in replies])
        results.check(f"{name}: exit status 0", code == 0, f"exit status {code}\n{server.log()[-1500:]}")
        last = max((t for t in finished_at if t is not None), default=signalled)
        results.check(f"{name}: exits {exited - signalled:.1f} s after the signal, {exited - last:.1f} s after the "
                      f"last request ended (not waiting out the {grace} s grace)",
                      code is not None and exited - signalled < grace, "")


def case_requests_cancelled(results, astrai, model, signum, name):
    """No grace: 6 requests of 1000 tokens (about 3 s each alone) end with
    503 or the stream's error event. A grace of 0 cancels them at once, so
    that no machine is fast enough to finish them within it."""
    grace = 0
    with ServerProcess(astrai, model, "--shutdown-grace", grace, "--max-running", 4) as server:
        server.wait_ready()
        threads, replies, _ = in_flight(server, 6, 1000)
        signalled = time.monotonic()
        server.signal(signum)
        code = server.wait_exit(HANG)
        exited = time.monotonic()
        for t in threads:
            t.join(HANG)
        results.check(f"{name}, grace {grace} s: all 6 long requests end (none hangs)",
                      not any(t.is_alive() for t in threads), [describe(r) for r in replies])
        results.check(f"{name}: whole requests get 503 'unavailable', streams end with the protocol's error event",
                      all(unavailable(r) for r in replies), [describe(r) for r in replies])
        results.check(f"{name}: exit status 0 ({exited - signalled:.1f} s after the signal)",
                      code == 0, f"exit status {code}\n{server.log()[-1500:]}")


def case_idle(results, astrai, model):
    with ServerProcess(astrai, model, "--shutdown-grace", GRACE) as server:
        server.wait_ready()
        start = time.monotonic()
        server.signal(signal.SIGTERM)
        code = server.wait_exit(GRACE + HANG)
        took = time.monotonic() - start
        results.check(f"an idle server exits 0 on SIGTERM without waiting out the {GRACE} s grace ({took:.1f} s)",
                      code == 0 and took < GRACE, f"exit status {code} after {took:.1f} s")
    # Silent connections are not requests: they must not hold the exit back.
    # Their timeouts (GRACE) are longer than the grace period on purpose: an
    # exit before they could fire, counted from before the connections
    # opened, was not theirs.
    grace = 2
    with ServerProcess(astrai, model, "--shutdown-grace", grace, "--keep-alive-timeout", GRACE,
                       "--read-timeout", GRACE, "--request-timeout", GRACE) as server:
        server.wait_ready()
        opened = time.monotonic()
        silent = [connect(server.port) for _ in range(3)]
        half = connect(server.port)
        half.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
        # Signalled once the server holds all four (an event, not a pause;
        # the /stats request's own connection is the fifth).
        deadline = time.monotonic() + HANG
        while stats(server.port)["http"]["connections_open"] < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        start = time.monotonic()
        server.signal(signal.SIGINT)
        code = server.wait_exit(GRACE + HANG)
        took = time.monotonic() - start
        results.check(f"a server with 3 silent clients and a half-sent request exits 0 before their timeouts "
                      f"({GRACE} s) could end them ({took:.1f} s after the signal; grace {grace} s)",
                      code == 0 and time.monotonic() - opened < GRACE, f"exit status {code} after {took:.1f} s")
        for sock in silent + [half]:
            sock.close()


def main():
    astrai = sys.argv[1]
    results = Results()
    model = make_model(astrai, scratch_dir("astrai-shutdown-"), slow=True)
    for signum, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT")):
        case_requests_finish(results, astrai, model, signum, name)
        case_requests_cancelled(results, astrai, model, signum, name)
    case_idle(results, astrai, model)
    return results.finish()


if __name__ == "__main__":
    sys.exit(main())
