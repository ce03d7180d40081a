// llama.cpp's tokenizer on a GGUF file's vocabulary, through node-llama-cpp
// (its bundled build; the vocabulary alone is loaded, no weights).
//
//   node tokenize.mjs MODEL.gguf < texts.jsonl > ids.jsonl
//
// Reads one JSON string per line; writes one JSON array of ids per line: the
// text tokenized as a chat template's output is (special and user-defined
// tokens parsed, common_tokenize with parse_special true), without BOS.
import {getLlama} from "node-llama-cpp";
import {readFileSync} from "node:fs";

const [modelPath] = process.argv.slice(2);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, vocabOnly: true});
const lines = readFileSync(0, "utf8").split("\n").filter((line) => line.length > 0);
for (const line of lines) console.log(JSON.stringify(model.tokenize(JSON.parse(line), true)));
await model.dispose();
