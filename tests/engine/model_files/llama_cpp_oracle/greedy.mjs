// llama.cpp's greedy tokens for token-id prompts, and its next-token
// distribution at each step, through node-llama-cpp (its bundled llama.cpp
// build, CPU only, never built or downloaded here).
//
//   node greedy.mjs MODEL.gguf N_TOKENS "1,345,22" "1,9,400" ...
//
// Prints one JSON object per prompt and line: {"tokens": [...], "logp":
// [[...], ...]}: the N_TOKENS tokens llama.cpp picks at temperature 0 after
// the prompt (fewer if it stops at an end-of-generation token, which is
// included), and before each one the natural log of every vocabulary
// token's probability (softmax of the logits; -Infinity is written as null).
import {getLlama} from "node-llama-cpp";

const [modelPath, nText, ...prompts] = process.argv.slice(2);
const n = Number(nText);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
for (const prompt of prompts) {
  const tokens = prompt.split(",").map(Number);
  const context = await model.createContext({contextSize: Math.max(64, tokens.length + n), threads: 1});
  const sequence = context.getSequence();
  const out = {tokens: [], logp: []};
  for await (const step of sequence.evaluateWithMetadata(tokens, {probabilities: true},
                                                         {temperature: 0, yieldEogToken: true})) {
    const row = new Array(step.probabilities.size);
    for (const [token, p] of step.probabilities) row[token] = Math.log(p);
    out.tokens.push(step.token);
    out.logp.push(row);
    if (out.tokens.length >= n || model.isEogToken(step.token)) break;
  }
  console.log(JSON.stringify(out));
  await context.dispose();
}
await model.dispose();
