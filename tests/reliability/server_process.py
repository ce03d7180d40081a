"""Shared helpers of the reliability tests: a real `astrai serve` process and
the two chat protocols spoken to it over loopback.

Standard library only. Every check here is written from the documented
formats (docs/server.md), not from the server's code: a response that breaks
the format raises Malformed, which the tests count as a failure.
"""
import atexit
import http.client
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

HOST = "127.0.0.1"  # every test talks to loopback only

PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


class Results:
    """ok/FAILED lines and the closing 'N passed, N failed' of every test program."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, condition, detail=""):
        if condition:
            self.passed += 1
            print("ok     " + name, flush=True)
        else:
            self.failed += 1
            print("FAILED " + name + ("\n       " + str(detail)[:2000] if detail != "" else ""), flush=True)
        return condition

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 1 if self.failed else 0


def scratch_dir(prefix):
    """A temporary folder, removed when the program exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


def make_model(astrai, folder, slow=False):
    """A synthetic model (random weights, made-up 512-piece vocabulary): no
    download, so CI never skips. The default has the stories260K shape
    (context 512, about 0.2 ms a token alone); `slow` is wider and deeper
    (context 1024, about 3 ms a token), so that one request of a few hundred
    tokens stays busy long enough to be disconnected, queued behind or shut
    down while it runs."""
    path = os.path.join(folder, "slow.gguf" if slow else "model.gguf")
    shape = ["--dim", "256", "--hidden", "688", "--layers", "8", "--heads", "8", "--kv-heads", "8",
             "--context", "1024"] if slow else []
    if not os.path.exists(path):
        subprocess.run([astrai, "make-model", "-o", path, "--preset", "stories260K", "--seed", "11", *shape],
                       check=True, capture_output=True, timeout=120)
    return path


class ServerProcess:
    """`astrai serve --port 0 ...` as a child process. Its stdout and stderr are
    drained by threads (a full pipe would stall the server) and kept for tests
    that read the log."""

    def __init__(self, astrai, model, *args, env=None):
        self.argv = [astrai, "serve", "--model", model, "--host", HOST, "--port", "0", *map(str, args)]
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.port = None
        self._lines = {"stdout": [], "stderr": []}
        self._lock = threading.Lock()
        self._port_found = threading.Event()
        self._readers = [threading.Thread(target=self._drain, args=(self.proc.stdout, "stdout"), daemon=True),
                         threading.Thread(target=self._drain, args=(self.proc.stderr, "stderr"), daemon=True)]
        for reader in self._readers:
            reader.start()

    def _drain(self, stream, name):
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            with self._lock:
                self._lines[name].append(line)
            match = re.search(r"listening on http://[^\s:]+:(\d+)", line)
            if match and self.port is None:
                self.port = int(match.group(1))
                self._port_found.set()
        self._port_found.set()  # the process ended: wake a waiter

    def log(self):
        """Everything the server wrote so far, stdout then stderr."""
        with self._lock:
            return "".join(self._lines["stdout"]) + "".join(self._lines["stderr"])

    def wait_ready(self, timeout=60):
        """Waits for the listening line, then for /health to say model_loaded."""
        deadline = time.monotonic() + timeout
        if not self._port_found.wait(timeout) or self.port is None:
            raise RuntimeError("the server printed no 'listening on' line:\n" + self.log())
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}:\n" + self.log())
            try:
                status, _, body = request(self.port, "GET", "/health", timeout=5)
                if status == 200 and json.loads(body).get("model_loaded") is True:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the model did not load in time:\n" + self.log())

    def rss_kib(self):
        """Resident memory of the server (VmRSS from /proc/PID/status), in KiB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS line")

    def signal(self, signum):
        self.proc.send_signal(signum)

    def wait_exit(self, timeout):
        """The exit status, or None when the process is still running after `timeout`."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout=30):
        """SIGTERM, then SIGKILL if it does not end within `timeout`. Returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            if self.wait_exit(timeout) is None:
                self.proc.kill()
                self.proc.wait()
        for reader in self._readers:
            reader.join(5)
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# --- plain requests -------------------------------------------------------

def request(port, method, path, body=None, headers=None, timeout=30):
    """One request on a fresh connection: (status, headers as a lower-case dict, body bytes)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        all_headers = {"Content-Type": "application/json"} if data is not None else {}
        all_headers.update(headers or {})
        conn.request(method, path, body=data, headers=all_headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def stats(port, headers=None):
    status, _, body = request(port, "GET", "/stats", headers=headers, timeout=10)
    if status != 200:
        raise RuntimeError(f"/stats answered {status}: {body[:200]!r}")
    return json.loads(body)


def idle(s):
    """Nothing running, nothing queued, no KV page or slot held by a task."""
    return (s["active_tasks"] == 0 and s["waiting_queue"] == 0 and s["cache"]["blocks_held"] == 0
            and s["cache"]["tasks"] == 0)


def wait_idle(port, timeout=60, headers=None):
    """Polls /stats until idle (its figures are published after each
    scheduler step). Returns (idle?, the last stats). The timeout detects a
    hang; it is no speed claim (it costs nothing when the server is idle)."""
    deadline = time.monotonic() + timeout
    while True:
        s = stats(port, headers)
        if idle(s) or time.monotonic() > deadline:
            return idle(s), s
        time.sleep(0.05)


# --- chat requests --------------------------------------------------------

def chat_body(protocol, prompt, max_tokens, temperature=0.0, seed=None, stream=False, **extra):
    body = {"model": "any", "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": temperature, "stream": stream}
    if seed is not None:
        body["seed"] = seed
    if protocol == "openai" and stream:
        # The usage chunk comes only when asked for (as from OpenAI); the
        # tests count tokens, so they ask.
        body["stream_options"] = {"include_usage": True}
    body.update(extra)
    return body


class Malformed(Exception):
    """A response that breaks its protocol's documented format."""


class Reply:
    """What a chat request got: status, headers, and for 200 the text, finish
    reason and token counts; for an error the decoded error body."""

    def __init__(self, status, headers, text=None, finish=None, prompt_tokens=None, completion_tokens=None,
                 error=None, stream_error=False):
        self.status, self.headers = status, headers
        self.text, self.finish = text, finish
        self.prompt_tokens, self.completion_tokens = prompt_tokens, completion_tokens
        self.error = error              # the JSON error body of a non-200 response
        self.stream_error = stream_error  # a 200 stream that ended with the protocol's error event


def _json(raw, what):
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise Malformed(f"{what} is not JSON ({e}): {raw[:200]!r}")


def _need(condition, message):
    if not condition:
        raise Malformed(message)


def check_error_body(protocol, status, body):
    """An error response is JSON in one of the documented shapes."""
    doc = _json(body, f"the {status} body")
    _need(isinstance(doc, dict), f"the {status} body is not an object: {doc!r}")
    if "detail" in doc:  # 404/413/422/503 (not loaded): FastAPI's shape
        return doc
    if protocol == "anthropic":
        _need(doc.get("type") == "error" and isinstance(doc.get("error"), dict)
              and isinstance(doc["error"].get("type"), str) and isinstance(doc["error"].get("message"), str),
              f"not an Anthropic error: {doc!r}")
    else:
        _need(isinstance(doc.get("error"), dict) and isinstance(doc["error"].get("message"), str)
              and "type" in doc["error"], f"not an OpenAI error: {doc!r}")
    return doc


def parse_openai_whole(body):
    doc = _json(body, "the response")
    try:
        choice = doc["choices"][0]
        text = choice["message"]["content"]
        usage = doc["usage"]
        _need(doc["object"] == "chat.completion" and choice["message"]["role"] == "assistant", f"bad shape: {doc!r}")
        _need(isinstance(text, str) and choice["finish_reason"] in ("stop", "length"), f"bad choice: {choice!r}")
        _need(usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"], f"bad usage: {usage!r}")
        return text, choice["finish_reason"], usage["prompt_tokens"], usage["completion_tokens"]
    except (KeyError, IndexError, TypeError) as e:
        raise Malformed(f"missing {e} in {doc!r}"[:500])


def parse_anthropic_whole(body):
    doc = _json(body, "the response")
    try:
        _need(doc["type"] == "message" and doc["role"] == "assistant", f"bad shape: {doc!r}")
        block = doc["content"][0]
        _need(block["type"] == "text" and isinstance(block["text"], str), f"bad content: {doc['content']!r}")
        _need(doc["stop_reason"] in ("end_turn", "max_tokens", "stop_sequence"), f"bad stop_reason: {doc!r}")
        usage = doc["usage"]
        # Anthropic counts prefix-cache reads apart from input_tokens: the prompt is both.
        prompt = usage["input_tokens"] + usage.get("cache_read_input_tokens", 0)
        return block["text"], doc["stop_reason"], prompt, usage["output_tokens"]
    except (KeyError, IndexError, TypeError) as e:
        raise Malformed(f"missing {e} in {doc!r}"[:500])


def read_sse(response):
    """The events of a text/event-stream response as (event name or None,
    data string) pairs, in order; comments (': waiting') are skipped."""
    events, name, data = [], None, []
    while True:
        raw = response.readline()
        if not raw:
            _need(not data, "the stream ended inside an event")
            return events
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                events.append((name, "\n".join(data)))
            name, data = None, []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
        else:
            raise Malformed(f"not an SSE line: {line!r}")


def parse_openai_stream(events, include_usage=True):
    """(text, finish_reason, prompt_tokens, completion_tokens, errored).
    Every data line is JSON but the last, `[DONE]`; the first chunk's delta
    is the role, the deltas concatenate to the text, a finish chunk and, only
    with stream_options.include_usage, the usage chunk come last (without it
    no chunk carries "usage", and the counts are None). A stream the server
    ended early carries {"error": ...} before [DONE]."""
    _need(events and events[-1][1] == "[DONE]", f"the stream does not end with [DONE]: {events[-2:]!r}")
    chunks = [_json(data, "a data line") for _, data in events[:-1]]
    _need(all(name is None for name, _ in events), "OpenAI streams have no event names")
    _need(chunks, "no chunk before [DONE]")
    if "error" in chunks[-1]:
        _need(isinstance(chunks[-1]["error"], dict) and "message" in chunks[-1]["error"], f"bad error: {chunks[-1]!r}")
        return None, None, None, None, True
    text, finish, usage = [], None, None
    try:
        _need(chunks[0]["choices"][0]["delta"].get("role") == "assistant", f"first chunk: {chunks[0]!r}")
        for i, chunk in enumerate(chunks):
            _need(chunk["object"] == "chat.completion.chunk", f"chunk {i}: {chunk!r}")
            _need(usage is None, "a chunk after the usage chunk")
            if chunk["choices"] == []:
                usage = chunk["usage"]
                continue
            _need(finish is None, "a chunk with choices after the finish chunk")
            choice = chunk["choices"][0]
            if "content" in choice["delta"]:
                text.append(choice["delta"]["content"])
            if choice["finish_reason"] is not None:
                finish = choice["finish_reason"]
                _need(finish in ("stop", "length") and choice["delta"] == {}, f"finish chunk: {chunk!r}")
    except (KeyError, IndexError, TypeError) as e:
        raise Malformed(f"missing {e} in a chunk")
    _need(finish is not None, "no finish_reason chunk")
    if not include_usage:
        _need(all("usage" not in chunk for chunk in chunks), "a usage field without include_usage")
        return "".join(text), finish, None, None, False
    _need(usage is not None and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"],
          f"bad or missing usage chunk: {usage!r}")
    return "".join(text), finish, usage["prompt_tokens"], usage["completion_tokens"], False


ANTHROPIC_ORDER = ["message_start", "content_block_start", "content_block_delta*", "content_block_stop",
                   "message_delta", "message_stop"]


def parse_anthropic_stream(events):
    """(text, stop_reason, input_tokens, output_tokens, errored). Events come
    in the documented order, each payload's type naming its event; a stream
    the server ended early ends with an `error` event."""
    docs = []
    for name, data in events:
        doc = _json(data, f"the {name} payload")
        _need(isinstance(doc, dict) and doc.get("type") == name, f"event {name!r} carries type {doc.get('type')!r}")
        docs.append(doc)
    names = [d["type"] for d in docs if d["type"] != "ping"]
    if names and names[-1] == "error":
        err = docs[-1].get("error")
        _need(isinstance(err, dict) and "type" in err and "message" in err, f"bad error event: {docs[-1]!r}")
        _need("message_stop" not in names, "an error after message_stop")
        return None, None, None, None, True
    deltas = [n for n in names if n == "content_block_delta"]
    expected = ["message_start", "content_block_start"] + deltas + ["content_block_stop", "message_delta",
                                                                     "message_stop"]
    _need(names == expected, f"event order {names!r}")
    try:
        text = "".join(d["delta"]["text"] for d in docs if d["type"] == "content_block_delta")
        start = docs[0]["message"]
        end = next(d for d in docs if d["type"] == "message_delta")
        reason = end["delta"]["stop_reason"]
        _need(reason in ("end_turn", "max_tokens", "stop_sequence"), f"stop_reason {reason!r}")
        return text, reason, start["usage"]["input_tokens"], end["usage"]["output_tokens"], False
    except (KeyError, IndexError, TypeError) as e:
        raise Malformed(f"missing {e} in the stream")


def chat(port, protocol, body, timeout=60, headers=None):
    """Sends one chat request and checks its response against the protocol.
    Returns a Reply; raises Malformed on a format violation and OSError
    (socket.timeout included) when the connection fails or hangs."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        data = json.dumps(body).encode()
        conn.request("POST", PATHS[protocol], body=data,
                     headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        hdrs = {k.lower(): v for k, v in response.getheaders()}
        if response.status != 200:
            raw = response.read()
            return Reply(response.status, hdrs, error=check_error_body(protocol, response.status, raw))
        if body.get("stream"):
            _need(hdrs.get("content-type", "").startswith("text/event-stream"), f"content-type {hdrs!r}")
            if protocol == "openai":
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                text, finish, p, c, errored = parse_openai_stream(read_sse(response), include_usage)
            else:
                text, finish, p, c, errored = parse_anthropic_stream(read_sse(response))
            return Reply(200, hdrs, text, finish, p, c, stream_error=errored)
        parse = parse_openai_whole if protocol == "openai" else parse_anthropic_whole
        return Reply(200, hdrs, *parse(response.read()))
    finally:
        conn.close()


# --- raw sockets, for clients that misbehave ------------------------------

def http_bytes(method, path, body=b"", headers=None):
    """(head, body) of an HTTP/1.1 request, as bytes to send in any slices."""
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}"]
    all_headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    all_headers.update(headers or {})
    lines += [f"{k}: {v}" for k, v in all_headers.items() if v is not None]
    return ("\r\n".join(lines) + "\r\n\r\n").encode(), body


def connect(port, timeout=10):
    return socket.create_connection((HOST, port), timeout=timeout)


def close_abruptly(sock, reset):
    """Closes with a FIN, or with a RST (SO_LINGER 0) when `reset`."""
    if reset:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def read_until_closed(sock, timeout):
    """Reads until the server closes the connection: (bytes read, how it
    ended: 'closed', 'reset' or 'timeout', seconds waited, seconds when the
    first byte came or None)."""
    start = time.monotonic()
    data = bytearray()
    first = None
    while True:
        left = timeout - (time.monotonic() - start)
        if left <= 0:
            return bytes(data), "timeout", time.monotonic() - start, first
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return bytes(data), "reset", time.monotonic() - start, first
        if not chunk:
            return bytes(data), "closed", time.monotonic() - start, first
        if first is None:
            first = time.monotonic() - start
        data += chunk


def status_of(raw):
    """The status code of a raw HTTP response, or None when there is none."""
    match = re.match(rb"HTTP/1\.[01] (\d{3}) ", raw)
    return int(match.group(1)) if match else None


def body_of(raw):
    """The body of a raw HTTP response with a Content-Length."""
    head, _, body = raw.partition(b"\r\n\r\n")
    return body
