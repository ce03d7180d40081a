// A model behind its own chat template through the official OpenAI and
// Anthropic SDKs (run_window_models.sh: a Gemma 3 folder and the GGUF
// `astrai convert` writes from it, with Gemma 3's real template and
// tokenizer; a sliding-window Mistral GGUF with Mistral 7B Instruct's
// template). What the template changes, against independent oracles:
//   - usage: each conversation's prompt tokens equal the count of
//     template_prompt_tokens.py (jinja2 renders, tokenizers.js tokenizes), on
//     both APIs, whole and streamed (ASTRAI_TEMPLATE_COUNTS);
//   - the template's end of turn ends a reply (logit_bias on it): finish
//     reason stop, no text;
//   - the template's own refusal (roles that do not alternate) is a 400
//     naming it, and the server goes on serving.
// Greedy decoding: whole and streamed replies agree. run.sh starts the server
// (ASTRAI_CLIENTS_SUITE=own-template) and passes ASTRAI_SERVER_URL,
// ASTRAI_API_KEY; run_window_models.sh passes ASTRAI_TEMPLATE_CASES (the
// conversations), ASTRAI_TEMPLATE_COUNTS, ASTRAI_TEMPLATE_TOKENIZER (the
// tokenizer.json) and ASTRAI_TEMPLATE_END (the end-of-turn token's text).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

const serverUrl = process.env.ASTRAI_SERVER_URL;
const apiKey = process.env.ASTRAI_API_KEY ?? 'unused';
if (!serverUrl) throw new Error('set ASTRAI_SERVER_URL to the server (run.sh does)');
if (new URL(serverUrl).hostname !== '127.0.0.1') throw new Error(`refusing to test ${serverUrl}: loopback only`);
const need = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name} (run_window_models.sh does)`);
  return value;
};
const cases = JSON.parse(readFileSync(need('ASTRAI_TEMPLATE_CASES'), 'utf8'));
const counts = JSON.parse(need('ASTRAI_TEMPLATE_COUNTS'));
assert.equal(counts.length, cases.length);
const tokenizer = JSON.parse(readFileSync(need('ASTRAI_TEMPLATE_TOKENIZER'), 'utf8'));
const endText = need('ASTRAI_TEMPLATE_END');
const END = tokenizer.added_tokens.find((t) => t.content === endText)?.id;
if (END === undefined) throw new Error(`no added token ${endText}`);

const openai = new OpenAI({ baseURL: `${serverUrl}/v1`, apiKey, maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: serverUrl, apiKey, maxRetries: 0 });

const openaiMessages = (c) => [...(c.system ? [{ role: 'system', content: c.system }] : []), ...c.messages];

describe('a model behind its own chat template, through both SDKs', () => {
  cases.forEach((c, i) => {
    test(`conversation ${i}: prompt tokens as jinja2 + tokenizers.js count them, whole and streamed`, async () => {
      const request = { model: 'astrai', messages: openaiMessages(c), max_tokens: 6, temperature: 0 };
      const whole = await openai.chat.completions.create(request);
      assert.equal(whole.usage.prompt_tokens, counts[i], JSON.stringify(whole.usage));
      let text = '', usage = null;
      const stream = await openai.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
      for await (const chunk of stream) {
        for (const choice of chunk.choices) text += choice.delta.content ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      assert.equal(text, whole.choices[0].message.content);
      assert.equal(usage.prompt_tokens, counts[i]);

      const message = {
        model: 'astrai', max_tokens: 6, temperature: 0, messages: c.messages, ...(c.system ? { system: c.system } : {}),
      };
      const reply = await anthropic.messages.create(message);
      // Anthropic's input_tokens leaves out the prompt's cached prefix (a paged cache reuses the OpenAI call's)
      const u = reply.usage;
      assert.equal(u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0), counts[i],
                   JSON.stringify(u));
      let streamed = '';
      const events = await anthropic.messages.create({ ...message, stream: true });
      for await (const event of events)
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') streamed += event.delta.text;
      assert.equal(streamed, reply.content.map((b) => b.text ?? '').join(''));
      assert.equal(streamed, whole.choices[0].message.content, 'both APIs render the same prompt');
    });
  });

  test(`the template's end of turn (${endText}) ends the reply`, async () => {
    const whole = await openai.chat.completions.create({
      model: 'astrai', messages: openaiMessages(cases[0]), max_tokens: 6, temperature: 0, logit_bias: { [END]: 100 },
    });
    assert.equal(whole.choices[0].finish_reason, 'stop', JSON.stringify(whole));
    assert.equal(whole.choices[0].message.content, '');
  });

  test("the template's refusal (roles that do not alternate) is a 400 naming it; the server goes on", async () => {
    const messages = [{ role: 'user', content: 'one' }, { role: 'user', content: 'two' }];
    await assert.rejects(openai.chat.completions.create({ model: 'astrai', messages, max_tokens: 2 }), (e) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /roles must alternate/);
      return true;
    });
    const after = await openai.chat.completions.create({ model: 'astrai', messages: openaiMessages(cases[0]), max_tokens: 2 });
    assert.equal(after.usage.prompt_tokens, counts[0]);
  });
});
