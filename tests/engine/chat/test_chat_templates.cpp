// Each chat template's exact output, written out from the published formats
// (Meta's Llama 2 and Llama 3 chat formats, OpenAI's ChatML), template
// detection from real tokenizer.chat_template texts, and prompt encoding with
// special tokens kept apart from user text.
#include <algorithm>

#include <catch2/catch.hpp>

#include "engine/chat/chat_template.h"
#include "engine/chat/prompt_encoder.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "tests/support/bpe_oracle_files.h"

namespace astrai {
namespace {

const std::vector<ChatMessage> kConversation = {
    {ChatRole::System, "You are kind."},
    {ChatRole::User, "Hi!"},
    {ChatRole::Assistant, "Hello."},
    {ChatRole::User, "Tell a joke."},
};

std::string render(const std::string& name, const std::vector<ChatMessage>& messages) {
  return prompt_text(make_chat_template(name)->render(messages));
}

}  // namespace

TEST_CASE("plain: the contents joined by newlines", "[chat]") {
  CHECK(render("plain", kConversation) == "You are kind.\nHi!\nHello.\nTell a joke.");
  CHECK(render("plain", {{ChatRole::User, "Once upon a time"}}) == "Once upon a time");
}

TEST_CASE("llama2: [INST] blocks with the system prompt in the first", "[chat]") {
  CHECK(render("llama2", kConversation) ==
        "[INST] <<SYS>>\nYou are kind.\n<</SYS>>\n\nHi! [/INST] Hello. </s><s>[INST] Tell a joke. [/INST]");
  CHECK(render("llama2", {{ChatRole::User, "  Hi!\n"}}) == "[INST] Hi! [/INST]");
  // A final assistant message is left open for generation to continue.
  CHECK(render("llama2", {{ChatRole::User, "Hi!"}, {ChatRole::Assistant, "Well,"}}) == "[INST] Hi! [/INST] Well,");
  // Only a system message: it still gets its [INST] block.
  CHECK(render("llama2", {{ChatRole::System, "Be terse."}}) == "[INST] <<SYS>>\nBe terse.\n<</SYS>>\n\n [/INST]");
  // EOS and BOS between turns are special parts, not text.
  const Prompt parts = make_chat_template("llama2")->render(kConversation);
  REQUIRE(parts.size() == 4);
  CHECK(parts[1].kind == PromptPart::Kind::Eos);
  CHECK(parts[2].kind == PromptPart::Kind::Bos);
}

TEST_CASE("chatml: <|im_start|>role ... <|im_end|>, then the assistant's turn", "[chat]") {
  CHECK(render("chatml", kConversation) ==
        "<|im_start|>system\nYou are kind.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nTell a joke.<|im_end|>\n"
        "<|im_start|>assistant\n");
  CHECK(render("chatml", {{ChatRole::User, "Hi!"}, {ChatRole::Assistant, "Well,"}}) ==
        "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nWell,");
}

TEST_CASE("llama3: header tokens and <|eot_id|>, contents trimmed", "[chat]") {
  CHECK(render("llama3", kConversation) ==
        "<|start_header_id|>system<|end_header_id|>\n\nYou are kind.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nTell a joke.<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(render("llama3", {{ChatRole::User, " Hi! "}, {ChatRole::Assistant, "Well,"}}) ==
        "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nWell,");
}

TEST_CASE("Templates are found by name; unknown names are refused with the list", "[chat]") {
  for (const auto& name : chat_template_names()) CHECK(make_chat_template(name)->name() == name);
  CHECK_THROWS_WITH(make_chat_template("alpaca"),
                    Catch::Contains("alpaca") && Catch::Contains("llama2") && Catch::Contains("chatml"));
}

TEST_CASE("Detection recognises the known templates by their markers", "[chat]") {
  // Excerpts of the templates Hugging Face and llama.cpp ship in GGUF metadata.
  const std::string llama2 =
      "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
      "messages[0]['content'] %}{% endif %}{% for message in loop_messages %}{% if message['role'] == 'user' %}"
      "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
      "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";
  const std::string chatml =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
      "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  const std::string llama3 =
      "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
      "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
      "'<|eot_id|>' %}{{ content }}{% endfor %}";
  CHECK(detect_chat_template(llama2) == "llama2");
  CHECK(detect_chat_template(chatml) == "chatml");
  CHECK(detect_chat_template(llama3) == "llama3");
  CHECK(detect_chat_template("") == "plain");
  CHECK(detect_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}") == "plain");
}

TEST_CASE("Prompt encoding: special parts become their ids, user text never does", "[chat]") {
  const Tokenizer base = make_synthetic_tokenizer(300);
  auto pieces = base.pieces();
  auto scores = base.scores();
  auto types = base.types();
  for (const char* special : {"<|im_start|>", "<|im_end|>"}) {
    pieces.push_back(special);
    scores.push_back(0.0f);
    types.push_back(TokenType::Control);
  }
  const Tokenizer tokenizer(pieces, scores, types);
  const int im_start = 300, im_end = 301;

  const std::vector<ChatMessage> messages = {{ChatRole::User, "Hi <|im_end|> there"}};
  const std::vector<int> ids = encode_prompt(make_chat_template("chatml")->render(messages), tokenizer);
  std::vector<int> expected = {tokenizer.bos_id(), im_start};
  auto append = [&](const std::string& text) {
    const auto run = tokenizer.encode(text, false);
    expected.insert(expected.end(), run.begin(), run.end());
  };
  append("user\nHi <|im_end|> there");
  expected.push_back(im_end);
  append("\n");
  expected.push_back(im_start);
  append("assistant\n");
  CHECK(ids == expected);
  CHECK(std::count(ids.begin(), ids.end(), im_end) == 1);  // the typed one stayed text

  // Without those pieces (a base model's vocabulary) the markers are text:
  // the whole prompt is one run, exactly as a plain prompt encodes.
  const std::string text = render("chatml", messages);
  CHECK(encode_prompt(make_chat_template("chatml")->render(messages), base) == base.encode(text, true));

  // Llama 2's turn separators are always the model's EOS and BOS ids.
  const std::vector<ChatMessage> turns = {{ChatRole::User, "a"}, {ChatRole::Assistant, "b"}, {ChatRole::User, "c"}};
  std::vector<int> llama2 = {base.bos_id()};
  for (int id : base.encode("[INST] a [/INST] b ", false)) llama2.push_back(id);
  llama2.push_back(base.eos_id());
  llama2.push_back(base.bos_id());
  for (int id : base.encode("[INST] c [/INST]", false)) llama2.push_back(id);
  CHECK(encode_prompt(make_chat_template("llama2")->render(turns), base) == llama2);
}

TEST_CASE("Prompt encoding starts with the tokenizer's own prefix: BOS only where encode adds one", "[chat]") {
  const std::vector<ChatMessage> messages = {{ChatRole::User, "Once upon a time"}};
  const auto plain = [&](const Tokenizer& t) { return encode_prompt(make_chat_template("plain")->render(messages), t); };
  // SentencePiece (llama2.c's) always starts with BOS.
  const Tokenizer sentencepiece = make_synthetic_tokenizer(300);
  CHECK(plain(sentencepiece).front() == sentencepiece.bos_id());
  CHECK(plain(sentencepiece) == sentencepiece.encode("Once upon a time", true));
  // gpt-oss's tokenizer names a BOS (<|startoftext|>) that its
  // post-processor never adds, and its chat format starts without one.
  const Tokenizer* gptoss = test::lenml_tokenizer("gptoss");
  if (!gptoss) {
    ASTRAI_MISSING(test::lenml_tokenizer_json("gptoss") << " not found (run npm ci in " << test::bpe_oracle_dir() << ")");
    return;
  }
  REQUIRE(gptoss->bos_id() >= 0);
  CHECK(plain(*gptoss) == gptoss->encode("Once upon a time", true));
  CHECK(plain(*gptoss).front() != gptoss->bos_id());
}

}  // namespace astrai
