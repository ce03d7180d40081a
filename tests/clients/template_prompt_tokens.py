#!/usr/bin/env python3
"""The prompt token counts a model's own chat template gives, from two
independent implementations: Python's jinja2 configured as transformers
configures it (tests/engine/jinja/hf_jinja_oracle.py) renders each
conversation (add_generation_prompt), tokenizers.js (bpe_oracle/encode.mjs)
tokenizes the rendering with its special tokens parsed, as a server does.

usage: template_prompt_tokens.py TOKENIZER_DIR CONVERSATIONS.json > counts.json
TOKENIZER_DIR holds tokenizer.json and tokenizer_config.json (its chat_template,
unless a chat_template.jinja beside it has one, which transformers reads first);
each conversation is {"system": text or null, "messages": [...]}. Prints a
JSON array: one count per conversation.
"""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../engine/jinja"))
import hf_jinja_oracle  # noqa: E402


def main():
    tokenizer_dir, conversations_path = sys.argv[1:3]
    with open(os.path.join(tokenizer_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    with open(conversations_path, encoding="utf-8") as f:
        conversations = json.load(f)
    jinja_file = os.path.join(tokenizer_dir, "chat_template.jinja")
    if os.path.exists(jinja_file):
        with open(jinja_file, encoding="utf-8") as f:
            config["chat_template"] = f.read()
    template = hf_jinja_oracle.environment().from_string(config["chat_template"])
    prompts = []
    for c in conversations:
        messages = ([{"role": "system", "content": c["system"]}] if c["system"] else []) + c["messages"]
        prompts.append(hf_jinja_oracle.render_request(template, config,
                                                      {"messages": messages, "add_generation_prompt": True}))
    encode = os.path.join(here, "../engine/tokenizer/bpe_oracle/encode.mjs")
    out = subprocess.run(["node", encode, os.path.join(tokenizer_dir, "tokenizer.json")], check=True,
                         input="".join(json.dumps(p) + "\n" for p in prompts).encode(), capture_output=True)
    rows = [json.loads(line) for line in out.stdout.decode().splitlines() if line]
    assert len(rows) == len(prompts), (len(rows), len(prompts))
    # Without the tokenizer's own prefix: the template writes BOS itself.
    print(json.dumps([len(row[0]) for row in rows]))


if __name__ == "__main__":
    main()
