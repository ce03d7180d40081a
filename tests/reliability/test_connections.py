"""Connections at the HTTP level against the real `astrai serve` (issue 16):

  - 1,000 idle connections (open, sending nothing) hold no worker thread:
    /health and a short chat completion on new connections are answered
    while every idle one is still open (so the answer waited for none of
    them to close), and the server's memory per idle connection is bounded
    (its RSS before and after is printed; the check allows 32 KiB each, far
    over what a connection costs in user space);
  - pipelining: one write holding GET /health, a chat request and GET
    /v1/models with "Connection: close" gets three answers, in order, then the
    connection closes;
  - HTTP/1.0: a stream comes without chunked encoding, delimited by closing;
  - header bytes: NUL, CR or percent-encoded NUL in a header value is 400
    (an API key with "\\0junk" after it was accepted before);
  - framing: Content-Length -1 and "abc" are 400, a 200 KB header 431, a
    declared 50 MB body 413 before the read timeout could fire (before: after
    the read timeout);
  - request smuggling: a GET, OPTIONS, HEAD or DELETE whose body
    (Content-Length or chunked) is a second request gets one answer, 400,
    and the connection closes: the body is never parsed as a pipelined
    request;
  - 100 prompts of 1 MB each (--prompt-mb 3 for the issue's size) are
    refused (400) from their bytes, and the server's RSS stays flat.

No check depends on the machine's speed (docs/testing.md): the server's
keep-alive, read and request timeouts are all TIMEOUT (60 s) and a client
waits at most WAIT (40 s), so a close or an answer within the wait is the
server's own doing (Connection: close, a refusal), never a timeout's; the
times measured are printed, not compared.

Usage: test_connections.py ASTRAI SOURCE_ROOT [--idle 1000] [--prompts 100] [--prompt-mb 1]
The test raises its own soft limit of open files (RLIMIT_NOFILE) to fit the
idle connections; `astrai serve` raises its own to the hard limit.
"""
import argparse
import json
import re
import resource
import socket
import sys
import time

from server_process import (HOST, PATHS, Results, ServerProcess, chat, chat_body, connect, http_bytes, make_model,
                            read_until_closed, request, scratch_dir, stats, status_of)

API_KEY = "connections-test-key"
AUTH = {"Authorization": "Bearer " + API_KEY}
TIMEOUT = 60  # the server's keep-alive, read and request timeouts
WAIT = 40     # the longest a client waits: under TIMEOUT, so nothing that comes within it is a timeout's doing


def raise_open_file_limit(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, needed), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def timed(fn):
    start = time.monotonic()
    value = fn()
    return value, time.monotonic() - start


def exchange(port, raw, timeout=WAIT):
    sock = connect(port)
    try:
        sock.sendall(raw)
        data, how, waited, _ = read_until_closed(sock, timeout)
        return data, how, waited
    finally:
        sock.close()


def test_idle_connections(results, server, count, check_memory):
    limit = raise_open_file_limit(count + 256)
    if limit < count + 64:
        results.check(f"the open-file limit fits {count} connections", False, f"soft limit {limit}")
        return
    before = server.rss_kib()
    sockets = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection((HOST, server.port), timeout=WAIT))
        deadline = time.monotonic() + WAIT
        while stats(server.port, AUTH)["http"]["connections_open"] < count and time.monotonic() < deadline:
            time.sleep(0.05)
        opened = stats(server.port, AUTH)["http"]["connections_open"]
        results.check(f"the server holds {count} idle connections", opened >= count, f"connections_open {opened}")
        # Answered while all the idle connections are still open: the answer
        # waited for none of them to be closed (they close only after
        # TIMEOUT). The times are printed, not compared.
        (status, _, body), seconds = timed(lambda: request(server.port, "GET", "/health", timeout=WAIT))
        still_open = stats(server.port, AUTH)["http"]["connections_open"]
        results.check(f"GET /health with {count} idle connections open is answered while all stay open "
                      f"({seconds * 1000:.0f} ms, {still_open} open after)",
                      status == 200 and still_open >= count, f"{status} {body[:100]!r} after {seconds:.2f} s")
        reply, seconds = timed(lambda: chat(server.port, "openai", chat_body("openai", "Once upon a time", 4),
                                            timeout=WAIT, headers=AUTH))
        still_open = stats(server.port, AUTH)["http"]["connections_open"]
        results.check(f"a 4-token completion with {count} idle connections open is answered while all stay open "
                      f"({seconds * 1000:.0f} ms, {still_open} open after)",
                      reply.status == 200 and still_open >= count, f"{reply.status} after {seconds:.2f} s")
        after = server.rss_kib()
        per = (after - before) * 1024 / count
        print(f"       RSS {before} KiB before, {after} KiB with {count} idle connections: "
              f"{per:.0f} bytes per connection", flush=True)
        if check_memory:
            results.check(f"memory per idle connection is bounded ({per:.0f} bytes <= 32 KiB)", per <= 32 * 1024,
                          f"{before} -> {after} KiB")
        else:
            print("SKIPPED: memory per idle connection (--no-memory-checks)", flush=True)
    finally:
        for s in sockets:
            s.close()


def test_pipelining(results, port):
    chat_head, chat_data = http_bytes("POST", PATHS["openai"], chat_body("openai", "Hello", 2),
                                      {"Authorization": AUTH["Authorization"]})
    raw = (b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + chat_head + chat_data +
           b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " + AUTH["Authorization"].encode() +
           b"\r\nConnection: close\r\n\r\n")
    data, how, waited = exchange(port, raw)
    answers = data.count(b"HTTP/1.1 200 ")
    order = [data.find(b'"model_loaded"'), data.find(b'"chat.completion"'), data.find(b'"object":"list"')]
    # Closed within WAIT: by the Connection: close, not by a timeout.
    results.check(f"three pipelined requests in one write: three answers in order, then closed ({waited:.2f} s)",
                  how in ("closed", "reset") and answers == 3 and -1 not in order and order == sorted(order),
                  f"{how} after {waited:.2f} s, {answers} answers, {data[:300]!r}")


def test_http10(results, port):
    head, data = http_bytes("POST", PATHS["openai"], chat_body("openai", "Once upon a time", 8, stream=True),
                            {"Authorization": AUTH["Authorization"]})
    head = head.replace(b"HTTP/1.1", b"HTTP/1.0", 1)
    raw, how, waited = exchange(port, head + data)
    response_head, _, body = raw.partition(b"\r\n\r\n")
    lower = response_head.lower()
    results.check("HTTP/1.0 stream: 200, no chunked encoding, the events delimited by the connection's close",
                  how in ("closed", "reset") and status_of(raw) == 200 and b"transfer-encoding" not in lower
                  and b"content-length" not in lower and body.startswith(b"data: {")
                  and body.endswith(b"data: [DONE]\n\n"), f"{how}, {raw[:400]!r}")


def test_header_bytes(results, port):
    cases = {
        "NUL": b"x-api-key: " + API_KEY.encode() + b"\x00junk",
        "CR": b"x-api-key: " + API_KEY.encode() + b"\rjunk",
        "percent-encoded NUL": b"x-api-key: " + API_KEY.encode() + b"%00junk",
    }
    for name, line in cases.items():
        raw = b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n" + line + b"\r\nConnection: close\r\n\r\n"
        data, how, _ = exchange(port, raw)
        results.check(f"a header value holding {name} after the API key: 400", status_of(data) == 400,
                      f"{how} {data[:200]!r}")
    data, _, _ = exchange(port, b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: " + API_KEY.encode() +
                          b"\r\nConnection: close\r\n\r\n")
    results.check("the same key without them: 200", status_of(data) == 200, data[:200])


def test_framing(results, port):
    post = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    for name, raw, want in (("Content-Length: -1", post + b"Content-Length: -1\r\n\r\n{}", 400),
                            ("Content-Length: abc", post + b"Content-Length: abc\r\n\r\n{}", 400),
                            ("one 200 KB header", b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"v" * 200_000 +
                             b"\r\n\r\n", 431)):
        data, how, _ = exchange(port, raw)
        results.check(f"{name}: {want}, then closed", status_of(data) == want and how in ("closed", "reset"),
                      f"{how} {data[:200]!r}")
    # 413 and closed within WAIT: before the read timeout (TIMEOUT) that
    # waiting for the body would end in.
    data, how, waited = exchange(port, post + b"Content-Length: 50000000\r\n\r\n")
    results.check(f"a declared 50 MB body, none sent: 413 before the read timeout ({waited * 1000:.0f} ms to the close)",
                  status_of(data) == 413 and how in ("closed", "reset"), f"{how} after {waited:.2f} s {data[:200]!r}")


def statuses(raw):
    """Every status code answered on one connection, in order."""
    return [int(code) for code in re.findall(rb"HTTP/1\.[01] (\d{3}) ", raw)]


def test_smuggling(results, port):
    """A request's body must never be parsed as the next request (RFC 9112
    section 6.3: read it or refuse it and close). Each case sends, in one
    write: a request carrying a body that is itself a request, then a
    legitimate request with "Connection: close". Before the fix a GET's body
    was left unread: three answers (200, the smuggled request's, 200), and
    a DELETE's chunked body too (httplib 0.11 reads a DELETE's body only
    with a Content-Length)."""
    smuggled = b"GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(smuggled), smuggled)
    after = (b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: " + AUTH["Authorization"].encode() +
             b"\r\nConnection: close\r\n\r\n")
    length = b"Content-Length: %d\r\n\r\n" % len(smuggled) + smuggled
    chunks = b"Transfer-Encoding: chunked\r\n\r\n" + chunked
    cases = (
        # (name, request line, framing and body, the statuses expected)
        ("GET with a Content-Length body", b"GET /health", length, [400]),
        ("GET with a chunked body", b"GET /health", chunks, [400]),
        ("OPTIONS with a Content-Length body", b"OPTIONS /health", length, [400]),
        ("OPTIONS with a chunked body", b"OPTIONS /health", chunks, [400]),
        ("HEAD with a Content-Length body", b"HEAD /health", length, [400]),
        ("DELETE with a Content-Length body", b"DELETE /health", length, [400]),
        ("DELETE with a chunked body", b"DELETE /health", chunks, [400]),
        # A POST's body is read whatever the route: the unknown route's answer
        # (401: no key), then the request sent after the body.
        ("POST to an unknown route with a Content-Length body", b"POST /v1/nowhere", length, [401, 200]),
        ("POST to an unknown route with a chunked body", b"POST /v1/nowhere", chunks, [401, 200]),
    )
    for name, line, framed_body, want in cases:
        raw = line + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + framed_body + after
        data, how, _ = exchange(port, raw)
        got = statuses(data)
        results.check(f"{name} that is a second request: {want}, then closed; the body never answered as a request",
                      got == want and how in ("closed", "reset"), f"statuses {got}, {how}, {data[:300]!r}")


def test_oversized_prompts(results, server, count, megabytes, check_memory):
    """Prompts far over the context, one after another: each is refused
    (400) from its bytes, and the memory their bodies took is returned. RSS
    is read after the 10th, 50th and last: between the 10th and the last it
    may grow by at most 4 MiB in all (before the fixes each 3 MB prompt added
    about 7 MB), and between the 50th and the last by at most 2 %."""
    text = ("Once upon a time there was a little girl. " * int(megabytes * 1024 * 1024 // 43))
    body = chat_body("openai", text, 4)
    statuses, rss = [], {}
    start = time.monotonic()
    for i in range(1, count + 1):
        statuses.append(chat(server.port, "openai", body, timeout=60, headers=AUTH).status)
        if i in (min(10, count), count // 2, count):
            rss[i] = server.rss_kib()
    seconds = time.monotonic() - start
    first, middle, last = rss[min(10, count)], rss[count // 2], rss[count]
    print(f"       {count} prompts of {len(text) / 1e6:.1f} MB in {seconds:.1f} s; RSS after the 10th {first} KiB, "
          f"the {count // 2}th {middle} KiB, the {count}th {last} KiB", flush=True)
    results.check(f"{count} prompts of {megabytes} MB: all 400 (context_length_exceeded)",
                  statuses == [400] * count, sorted(set(statuses)))
    if not check_memory:
        print("SKIPPED: RSS flat across the prompts (--no-memory-checks)", flush=True)
        return
    results.check(f"RSS flat across them: +{last - first} KiB from the 10th to the {count}th (<= 4096), "
                  f"{(last - middle) * 100 / middle:+.1f} % from the {count // 2}th (<= 2 %)",
                  last - first <= 4096 and last - middle <= 0.02 * middle, rss)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("astrai")
    parser.add_argument("source_root")
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--prompts", type=int, default=100)
    parser.add_argument("--prompt-mb", type=float, default=1.0)
    parser.add_argument("--no-memory-checks", action="store_true",
                        help="skip the RSS checks (sanitizer builds: ASan's quarantine keeps freed memory)")
    args = parser.parse_args()
    results = Results()
    model = make_model(args.astrai, scratch_dir("astrai-connections-"))
    # Timeouts long enough that the idle connections stay open while they
    # are measured, and that no client wait (WAIT) can end in one.
    with ServerProcess(args.astrai, model, "--api-key", API_KEY, "--keep-alive-timeout", TIMEOUT,
                       "--read-timeout", TIMEOUT, "--request-timeout", TIMEOUT, "--threads", 8, "--quiet") as server:
        server.wait_ready()
        test_idle_connections(results, server, args.idle, not args.no_memory_checks)
        test_pipelining(results, server.port)
        test_http10(results, server.port)
        test_header_bytes(results, server.port)
        test_framing(results, server.port)
        test_smuggling(results, server.port)
        test_oversized_prompts(results, server, args.prompts, args.prompt_mb, not args.no_memory_checks)
        code = server.stop()
    results.check("the server stopped cleanly", code == 0, f"exit status {code}")
    return results.finish()


if __name__ == "__main__":
    sys.exit(main())
