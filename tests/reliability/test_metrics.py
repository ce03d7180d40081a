#!/usr/bin/env python3
"""GET /metrics of a real `astrai serve` (paged cache, --api-key), checked
against what its responses said.

Usage: test_metrics.py ASTRAI SOURCE_ROOT

Twelve chat requests (both protocols, whole and streamed, four at a time,
some with the same long prompt so that the prefix cache hits) and four
refused ones (422 twice, 401, 404), then one scrape:
  - the text parses (a parser written here from the format's description,
    and the Prometheus project's own Python parser,
    prometheus_client.parser.text_string_to_metric_families, from Debian's
    python3-prometheus-client where it is installed: skipped, saying so,
    where it is not);
  - astrai_http_requests_total counts each route and status exactly;
  - the prompt and generation token counters equal the sums of the
    responses' usage fields; the time-to-first-token and end-to-end
    histograms count every request once, the inter-token one each token
    after the first; every histogram's buckets are cumulative and its +Inf
    bucket equals _count;
  - idle afterwards: no request running or waiting, no cache in use; the
    prefix cache was asked about every prompt token once and hit some;
  - /metrics needs the key.
Prints 'N passed, N failed' last; exits non-zero on failure.
"""
import math
import os
import re
import secrets
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../support"))
from missing_data import debian_import, missing  # noqa: E402
from server_process import Results, ServerProcess, chat, chat_body, make_model, request, scratch_dir, wait_idle

_parser = debian_import("prometheus_client.parser")  # pure Python
text_string_to_metric_families = _parser.text_string_to_metric_families if _parser else None

LONG = ("Once upon a time there was a little girl who lived in a village near the forest. "
        "Whenever she went out, the little girl wore a red riding cloak, so everyone in the village called her")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def parse(text):
    """{family: {"type", "help", "samples": [(name, labels dict, value)]}};
    raises ValueError where the text breaks the format."""
    families, current = {}, None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            current = line.split(" ", 3)[2]
            if current in families:
                raise ValueError("family repeated: " + line)
            families[current] = {"help": line.split(" ", 3)[3], "type": None, "samples": []}
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            if name != current or families[name]["type"] or kind not in ("counter", "gauge", "histogram"):
                raise ValueError("TYPE out of place: " + line)
            families[name]["type"] = kind
        else:
            match = SAMPLE.match(line)
            if not match or current is None or families[current]["type"] is None:
                raise ValueError("not a sample of a declared family: " + line)
            name, labels, value = match.groups()
            suffixes = ("", "_bucket", "_sum", "_count") if families[current]["type"] == "histogram" else ("",)
            if name not in (current + s for s in suffixes):
                raise ValueError(f"sample {name} inside family {current}")
            pairs = dict(LABEL.findall(labels or ""))
            families[current]["samples"].append((name, pairs, float(value)))
    return families


def value(families, name, sample=None, **labels):
    for n, l, v in families[name]["samples"]:
        if n == (sample or name) and l == labels:
            return v
    return 0.0  # a labelled counter appears once it is counted


def histogram_problems(families, name):
    """What is wrong with a histogram's buckets (empty when nothing)."""
    samples = families[name]["samples"]
    buckets = [(float(l["le"]), v) for n, l, v in samples if n == name + "_bucket"]
    problems = []
    if [le for le, _ in buckets] != sorted(le for le, _ in buckets) or buckets[-1][0] != math.inf:
        problems.append(f"le not increasing to +Inf: {buckets}")
    if any(later < earlier for (_, earlier), (_, later) in zip(buckets, buckets[1:])):
        problems.append(f"buckets not cumulative: {buckets}")
    if buckets[-1][1] != value(families, name, name + "_count"):
        problems.append(f"+Inf bucket {buckets[-1][1]} != _count {value(families, name, name + '_count')}")
    return problems


def main():
    astrai = sys.argv[1]
    results = Results()
    model = make_model(astrai, scratch_dir("astrai-metrics-"))
    key = "sk-" + secrets.token_hex(8)
    auth = {"Authorization": "Bearer " + key}
    with ServerProcess(astrai, model, "--api-key", key, "--cache", "paged", "--max-running", "4", "--quiet") as server:
        server.wait_ready()
        port = server.port
        calls = []
        for i in range(12):
            protocol = ("openai", "anthropic")[i % 2]
            prompt = LONG if i % 3 == 0 else f"Request number {i} asks for a story about"
            calls.append((protocol, chat_body(protocol, prompt, 3 + i, stream=i % 4 >= 2)))
        with ThreadPoolExecutor(4) as pool:
            replies = list(pool.map(lambda c: chat(port, c[0], c[1], headers=auth), calls))
        results.check("12 chat requests answered 200", all(r.status == 200 and not r.stream_error for r in replies),
                      [r.status for r in replies])
        refused = [
            request(port, "POST", "/v1/chat/completions", {"messages": []}, auth)[0],
            request(port, "POST", "/v1/messages", b"{not json", auth)[0],
            request(port, "POST", "/v1/chat/completions", chat_body("openai", "hi", 2), {"x-api-key": "wrong"})[0],
            request(port, "GET", "/no/such/route", None, auth)[0],
        ]
        results.check("the refused requests got 422, 422, 401, 404", refused == [422, 422, 401, 404], refused)
        idle, _ = wait_idle(port, headers=auth)  # the engine's figures are published after each step
        results.check("the engine is idle", idle)
        without_key = request(port, "GET", "/metrics")[0]
        status, headers, raw = request(port, "GET", "/metrics", None, auth)
        server.stop()
    results.check("/metrics without the key: 401", without_key == 401, without_key)
    results.check("/metrics with the key: 200, text/plain; version=0.0.4",
                  status == 200 and headers.get("content-type", "").startswith("text/plain; version=0.0.4"),
                  (status, headers))
    text = raw.decode()
    try:
        families = parse(text)
    except (ValueError, IndexError) as e:
        results.check("the text parses", False, e)
        return results.finish()
    results.check("the text parses (HELP, TYPE, then the family's samples)", True)

    openai = [r for (p, _), r in zip(calls, replies) if p == "openai"]
    prompt_tokens = sum(r.prompt_tokens for r in replies)
    completion_tokens = sum(r.completion_tokens for r in replies)
    by_route = {(l["route"], l["status"]): v for _, l, v in families["astrai_http_requests_total"]["samples"]}
    expected = {("/v1/chat/completions", "200"): len(openai), ("/v1/messages", "200"): len(replies) - len(openai),
                ("/v1/chat/completions", "422"): 1, ("/v1/messages", "422"): 1, ("/v1/chat/completions", "401"): 1,
                ("other", "404"): 1}
    results.check("astrai_http_requests_total by route and status",
                  all(by_route.get(k) == v for k, v in expected.items()), by_route)
    results.check(f"astrai_prompt_tokens_total == the usage's prompt tokens ({prompt_tokens})",
                  value(families, "astrai_prompt_tokens_total") == prompt_tokens,
                  value(families, "astrai_prompt_tokens_total"))
    results.check(f"astrai_generation_tokens_total == the usage's completion tokens ({completion_tokens})",
                  value(families, "astrai_generation_tokens_total") == completion_tokens,
                  value(families, "astrai_generation_tokens_total"))
    counts = {name: value(families, name, name + "_count") for name in
              ("astrai_time_to_first_token_seconds", "astrai_e2e_request_latency_seconds",
               "astrai_inter_token_latency_seconds")}
    results.check("TTFT and end-to-end histograms count each request once, inter-token each later token",
                  counts == {"astrai_time_to_first_token_seconds": len(replies),
                             "astrai_e2e_request_latency_seconds": len(replies),
                             "astrai_inter_token_latency_seconds": completion_tokens - len(replies)}, counts)
    histograms = [name for name, f in families.items() if f["type"] == "histogram"]
    problems = [p for name in histograms for p in histogram_problems(families, name)]
    results.check(f"{len(histograms)} histograms: buckets cumulative, +Inf == _count", not problems, problems)
    finished = {l["finished_reason"]: v for _, l, v in families["astrai_request_success_total"]["samples"]}
    lengths = len([r for r in replies if r.finish in ("length", "max_tokens")])
    results.check("astrai_request_success_total by finished_reason, as the responses said",
                  finished == {"stop": len(replies) - lengths, "length": lengths, "abort": 0, "error": 0}, finished)
    idle_gauges = [value(families, n) for n in ("astrai_num_requests_running", "astrai_num_requests_waiting",
                                               "astrai_kv_cache_usage_perc")]
    results.check("idle: running 0, waiting 0, KV cache usage 0", idle_gauges == [0, 0, 0], idle_gauges)
    queries, hits = value(families, "astrai_prefix_cache_queries_total"), value(families, "astrai_prefix_cache_hits_total")
    results.check("prefix cache: every prompt token queried once, some hit (the long prompt repeats)",
                  queries == prompt_tokens and 0 < hits < queries, (queries, hits))

    if text_string_to_metric_families is None:
        if missing("the Prometheus Python parser (prometheus_client; Debian: python3-prometheus-client) "
                   "is not installed"):
            results.check("the Prometheus Python parser is installed", False)
        return results.finish()
    try:
        theirs = {f.name: f for f in text_string_to_metric_families(text)}
    except Exception as e:  # the parser raises ValueError and others on malformed text
        results.check("prometheus_client parses the text", False, repr(e))
        return results.finish()
    # prometheus_client names a counter's family without _total.
    kinds = {name: theirs.get(name[:-6] if f["type"] == "counter" and name.endswith("_total") else name)
             for name, f in families.items()}
    results.check(f"prometheus_client parses the text: the same {len(families)} families and types",
                  all(k is not None and k.type == families[n]["type"] for n, k in kinds.items()),
                  {n: k and k.type for n, k in kinds.items()})
    mine = sorted((n, tuple(sorted(l.items())), v) for f in families.values() for n, l, v in f["samples"])
    theirs_samples = sorted((s.name, tuple(sorted(s.labels.items())), s.value) for f in theirs.values()
                            for s in f.samples)
    results.check(f"prometheus_client reads the same {len(mine)} samples", mine == theirs_samples,
                  set(mine) ^ set(theirs_samples))
    return results.finish()


if __name__ == "__main__":
    sys.exit(main())
