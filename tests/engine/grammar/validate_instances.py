#!/usr/bin/env python3
"""Validates JSON texts against JSON Schemas with python3-jsonschema (Draft 2020-12).

Reads JSON Lines from argv[1]: {"schema": <schema>, "text": "<instance as JSON text>"};
prints one line per input: "ok", or "invalid: <reason>". One process validates a
whole batch (tests/engine/grammar/test_token_walks.cpp writes the batch).

`nullable` is OpenAPI's, not JSON Schema's: a schema with "nullable": true is
checked as anyOf [itself, {"type": "null"}], which is what it means.
"""
import json
import sys

import jsonschema


def lower_nullable(s):
    if isinstance(s, list):
        return [lower_nullable(x) for x in s]
    if not isinstance(s, dict):
        return s
    s = {k: lower_nullable(v) for k, v in s.items()}
    if s.pop("nullable", False):
        defs = {k: s.pop(k) for k in ("$defs", "definitions") if k in s}
        return {"anyOf": [s, {"type": "null"}], **defs}
    return s


def verdict(case):
    try:
        instance = json.loads(case["text"])
    except ValueError as e:
        return f"invalid: not JSON: {e}"
    validator = jsonschema.Draft202012Validator(lower_nullable(case["schema"]))
    errors = sorted(validator.iter_errors(instance), key=str)
    return "ok" if not errors else "invalid: " + errors[0].message.replace("\n", " ")[:300]


def main():
    # Verdicts hold the instance's text (any Unicode) whatever the locale;
    # random walks may nest deeper than Python's default recursion limit.
    sys.stdout.reconfigure(encoding="utf-8")
    sys.setrecursionlimit(20000)
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            try:
                print(verdict(case))
            except Exception as e:  # a validator failure is this case's verdict, not the batch's end
                print(f"validator error: {type(e).__name__}: {str(e)[:300]}".replace("\n", " "))


main()
