// gpt-oss's harmony output through the official OpenAI SDK: a random-weight
// gpt-oss model (run_window_models.sh) served with gpt-oss's real chat
// template, so the server reads its output as harmony messages
// (engine/chat_planning/harmony_output.h). The model is random, so the tests
// steer it with logit_bias on the real o200k_harmony ids, inside the
// grammars a response format and tool_choice "required" impose (the optional
// analysis message, then the answer's own header):
//   - reasoning: the analysis channel opened and never closed by the model
//     (<|end|> at -100): the thinking budget (half of max_tokens for a
//     constrained answer) forces its close, <|end|><|start|>assistant, and
//     the final channel's answer follows under the response format: the
//     analysis is reasoning_content, the answer (a digit) the content;
//   - a tool call: <|channel|> then "comment" at +100 choose the commentary
//     channel over the analysis (the grammar writes the rest of the header);
//     the call to functions.NAME comes back as tool_calls with valid arguments;
//   - a conversation sent back with the call's reasoning_content: the
//     template shows it again (gpt-oss keeps a call's analysis), so the
//     prompt grows.
// Whole and streamed responses agree (greedy decoding). run.sh starts the
// server (ASTRAI_CLIENTS_SUITE=harmony) and passes
//   ASTRAI_SERVER_URL, ASTRAI_API_KEY, ASTRAI_HARMONY_TOKENIZER (the model's tokenizer.json).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import OpenAI from 'openai';

const serverUrl = process.env.ASTRAI_SERVER_URL;
const apiKey = process.env.ASTRAI_API_KEY ?? 'unused';
if (!serverUrl) throw new Error('set ASTRAI_SERVER_URL to the server (run.sh does)');
if (new URL(serverUrl).hostname !== '127.0.0.1') throw new Error(`refusing to test ${serverUrl}: loopback only`);
const tokenizerPath = process.env.ASTRAI_HARMONY_TOKENIZER;
if (!tokenizerPath) throw new Error('set ASTRAI_HARMONY_TOKENIZER to the gpt-oss tokenizer.json (run.sh does)');

// The ids of the harmony markers and of the words "analysis" and "comment" in the real vocabulary.
const tokenizer = JSON.parse(readFileSync(tokenizerPath, 'utf8'));
const added = Object.fromEntries(tokenizer.added_tokens.map((t) => [t.content, t.id]));
const id = (text) => {
  const found = added[text] ?? tokenizer.model.vocab[text];
  if (found === undefined) throw new Error(`no token ${text} in ${tokenizerPath}`);
  return found;
};
const CHANNEL = id('<|channel|>'), MESSAGE = id('<|message|>'), END = id('<|end|>'), ANALYSIS = id('analysis');
const COMMENT = id('comment');

const openai = new OpenAI({ baseURL: `${serverUrl}/v1`, apiKey, maxRetries: 0 });
const question = [{ role: 'user', content: 'What is the weather in Paris?' }];

// A streamed chat completion's parts joined.
async function streamed(request) {
  const parts = { reasoning: '', content: '', finish: null };
  const stream = await openai.chat.completions.create({ ...request, stream: true });
  for await (const chunk of stream)
    for (const choice of chunk.choices) {
      parts.reasoning += choice.delta.reasoning_content ?? '';
      parts.content += choice.delta.content ?? '';
      if (choice.finish_reason) parts.finish = choice.finish_reason;
    }
  return parts;
}

describe('gpt-oss harmony output through the OpenAI SDK', () => {
  test('the analysis reaches reasoning_content, closed at its thinking budget; the answer follows, whole and streamed alike', async () => {
    const request = {
      model: 'astrai', messages: question, max_tokens: 40, temperature: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'integer', minimum: 0, maximum: 9 } } },
      logit_bias: { [CHANNEL]: 100, [ANALYSIS]: 100, [MESSAGE]: 100, [END]: -100 },
    };
    const whole = await openai.chat.completions.create(request);
    const choice = whole.choices[0];
    assert.equal(choice.finish_reason, 'stop', JSON.stringify(whole));
    assert.equal(typeof choice.message.reasoning_content, 'string');
    assert.ok(choice.message.reasoning_content.length > 0, JSON.stringify(choice.message));
    // The body only: not the header, not the close (the biased markers may be its text).
    const reasoning = choice.message.reasoning_content;
    assert.ok(!reasoning.startsWith('<|channel|>') && !reasoning.includes('<|end|>'), `the header and the close are not reasoning: ${JSON.stringify(whole)}`);
    assert.match(choice.message.content, /^[0-9]$/, 'the answer the response format allows');
    // The budget: 20 tokens (half of max_tokens) from the analysis header on,
    // then the close's tokens: <|end|> at -100 has the model spell it in
    // ordinary tokens, at most one per byte of "<|end|><|start|>assistant".
    const reasoningTokens = whole.usage.completion_tokens_details.reasoning_tokens;
    assert.ok(reasoningTokens > 20 && reasoningTokens <= 20 + 25, `reasoning_tokens ${reasoningTokens}`);
    const parts = await streamed(request);
    assert.equal(parts.reasoning, choice.message.reasoning_content);
    assert.equal(parts.content, choice.message.content);
    assert.equal(parts.finish, 'stop');
  });

  const weather = {
    type: 'function',
    function: {
      name: 'get_weather', description: 'The weather in a city',
      parameters: { type: 'object', properties: { city_id: { type: 'integer', minimum: 0, maximum: 99 } }, required: ['city_id'], additionalProperties: false },
    },
  };

  test('a call to functions.NAME reaches tool_calls, whole and streamed alike', async () => {
    const request = {
      model: 'astrai', messages: question, tools: [weather], tool_choice: 'required', max_tokens: 100, temperature: 0,
      logit_bias: { [CHANNEL]: 100, [COMMENT]: 100 },
    };
    const whole = await openai.chat.completions.create(request);
    const choice = whole.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.function.name, 'get_weather');
    const args = JSON.parse(call.function.arguments);
    assert.deepEqual(Object.keys(args), ['city_id']);
    assert.ok(Number.isInteger(args.city_id) && args.city_id >= 0 && args.city_id <= 99, call.function.arguments);
    assert.ok(!choice.message.content, JSON.stringify(choice.message));
    const stream = openai.chat.completions.stream(request);
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    assert.equal(final.choices[0].message.tool_calls[0].function.name, 'get_weather');
    assert.deepEqual(JSON.parse(final.choices[0].message.tool_calls[0].function.arguments), args);
  });

  test('a call sent back with its reasoning_content: the template shows the analysis again', async () => {
    const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city_id":7}' } };
    const history = (reasoning) => [
      ...question,
      { role: 'assistant', content: null, tool_calls: [call], ...(reasoning ? { reasoning_content: reasoning } : {}) },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ];
    const ask = (messages) => openai.chat.completions.create({ model: 'astrai', messages, tools: [weather], tool_choice: 'none', max_tokens: 2, temperature: 0 });
    const without = await ask(history(''));
    const withReasoning = await ask(history('The user wants the weather in Paris, city 7.'));
    // "<|start|>assistant<|channel|>analysis<|message|>" + the text + "<|end|>": more than a dozen tokens.
    assert.ok(withReasoning.usage.prompt_tokens > without.usage.prompt_tokens + 12,
      `${withReasoning.usage.prompt_tokens} prompt tokens with the reasoning, ${without.usage.prompt_tokens} without`);
  });

  test('reasoning_effort outside the API\'s values is refused', async () => {
    await assert.rejects(openai.chat.completions.create({ model: 'astrai', messages: question, max_tokens: 1, reasoning_effort: 'extreme' }),
      (e) => e.status === 400 && /reasoning_effort/.test(e.message));
  });
});
