// Tokenizer::load_hf: a Hugging Face tokenizer (tokenizer.json) with the
// BOS and EOS named by tokenizer_config.json.
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/text/read_file.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/special_tokens.h"
#include "engine/tokenizer/tokenizer.h"

namespace astrai {

namespace {

using nlohmann::json;

nlohmann::ordered_json read_json_file(const std::string& path) {
  const std::string text = read_whole_file(path, "tokenizer config '" + path + "'");
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const json::exception& e) {
    throw std::runtime_error("tokenizer config '" + path + "': not JSON: " + e.what());
  }
}

// bos_token / eos_token: "<s>", {"content": "<s>", ...} or null/absent ("").
// The id of an added token (or vocabulary piece) spelled exactly `text`.
int token_id(const HfTokenizer& bpe, const std::string& text, const char* key, const std::string& path) {
  for (const AddedToken& a : bpe.added_tokens())
    if (a.content == text) return a.id;
  const std::vector<int> ids = bpe.encode(text, false);
  if (ids.size() == 1) return ids[0];
  throw std::runtime_error("tokenizer config '" + path + "': " + key + " '" + text + "' is not one token");
}

}  // namespace

Tokenizer Tokenizer::load_hf(const std::string& tokenizer_json_path, const std::string& tokenizer_config_path,
                             std::vector<int> extra_end_ids, int vocab_size) {
  return load_hf(std::make_shared<const HfTokenizer>(HfTokenizer::load(tokenizer_json_path)), tokenizer_json_path,
                 tokenizer_config_path, std::move(extra_end_ids), vocab_size);
}

// Added tokens past the model's vocabulary (Gemma 3 1B: 262,144 embedding
// rows, and <image_soft_token> at id 262144 for the multimodal models) are
// left out: the model cannot read them, so the text they spell is encoded as
// ordinary text instead (as llama.cpp's converter, which writes the model's
// vocabulary size of pieces, does). A piece of the BPE model itself past
// the vocabulary is still an error (from the Tokenizer constructors).
namespace {
std::shared_ptr<const HfTokenizer> without_added_past(std::shared_ptr<const HfTokenizer> hf, int vocab_size,
                                                      const std::string& origin) {
  if (vocab_size == 0 || vocab_size >= hf->vocab_size()) return hf;
  BpeTokenizerParts parts = hf->parts();
  for (const auto& [piece, id] : parts.vocab)
    if (id >= vocab_size) return hf;  // not ours to trim: the constructor names the problem
  std::erase_if(parts.added, [&](const AddedToken& a) { return a.id >= vocab_size; });
  for (const int id : parts.prefix_ids)
    if (id >= vocab_size) return hf;
  return std::make_shared<const HfTokenizer>(HfTokenizer::from_parts(std::move(parts), origin));
}
}  // namespace

Tokenizer Tokenizer::load_hf(std::shared_ptr<const HfTokenizer> bpe, const std::string& tokenizer_json_path,
                             const std::string& tokenizer_config_path, std::vector<int> extra_end_ids,
                             int vocab_size) {
  bpe = without_added_past(std::move(bpe), vocab_size, "tokenizer '" + tokenizer_json_path + "'");
  const nlohmann::ordered_json config = read_json_file(tokenizer_config_path);
  if (!config.is_object()) throw std::runtime_error("tokenizer config '" + tokenizer_config_path + "': not an object");
  const std::string source = "tokenizer config '" + tokenizer_config_path + "'";
  const std::string bos = special_token_text(config, "bos_token", source).value_or("");
  const std::string eos = special_token_text(config, "eos_token", source).value_or("");
  if (eos.empty()) throw std::runtime_error("tokenizer config '" + tokenizer_config_path + "': no eos_token");
  const int bos_id = bos.empty() ? -1 : token_id(*bpe, bos, "bos_token", tokenizer_config_path);
  const int eos_id = token_id(*bpe, eos, "eos_token", tokenizer_config_path);
  try {
    if (bpe->sentencepiece_style())
      return from_hf_sentencepiece(std::move(bpe), bos_id, eos_id, std::move(extra_end_ids), vocab_size);
    return Tokenizer(std::move(bpe), bos_id, eos_id, std::move(extra_end_ids), vocab_size);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("tokenizer '" + tokenizer_json_path + "': " + e.what());
  }
}

}  // namespace astrai
