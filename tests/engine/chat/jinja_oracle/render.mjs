// The second oracle of chat_template_oracle: @huggingface/jinja (the
// JavaScript Jinja implementation of transformers.js), independent of jinja2.
//   node render.mjs < requests.jsonl > results.jsonl
// Each input line is {"template": str, "context": {...}}; each output line is
// {"ok": true, "output": str} or {"ok": false, "error": str}.
import { readFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";

const out = [];
for (const line of readFileSync(0, "utf8").split("\n")) {
  if (line === "") continue;
  const { template, context } = JSON.parse(line);
  try {
    out.push(JSON.stringify({ ok: true, output: new Template(template).render(context) }));
  } catch (e) {
    out.push(JSON.stringify({ ok: false, error: String(e && e.message ? e.message : e) }));
  }
}
process.stdout.write(out.join("\n") + (out.length ? "\n" : ""));
