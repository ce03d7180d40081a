#include "engine/chat/prompt_encoder.h"

#include <stdexcept>

namespace astrai {
namespace {

// The id of a special marker, or -1 when the vocabulary has no such control
// piece (a Normal piece with the same spelling would be a coincidence: the
// marker is then spelled out as text).
int special_id(const Tokenizer& tokenizer, const std::string& piece) {
  const int id = tokenizer.piece_id(piece);
  if (id < 0) return -1;
  const TokenType type = tokenizer.type(id);
  return (type == TokenType::Control || type == TokenType::UserDefined) ? id : -1;
}

}  // namespace

std::vector<int> encode_prompt(const Prompt& prompt, const Tokenizer& tokenizer) {
  if (prompt.size() == 1 && prompt[0].kind == PromptPart::Kind::Rendered)
    return tokenizer.encode_with_special_tokens(prompt[0].text);
  // The tokenizer's own prefix, as encode(text) puts it first: BOS for
  // SentencePiece and Llama 3, nothing for Qwen (no BOS) and gpt-oss (a BOS
  // its post-processor never adds).
  std::vector<int> ids = tokenizer.encode("", true);
  std::string text;
  auto flush_text = [&] {
    if (text.empty()) return;
    const std::vector<int> run = tokenizer.encode(text, false);
    ids.insert(ids.end(), run.begin(), run.end());
    text.clear();
  };
  for (const PromptPart& part : prompt) {
    int id = -1;
    switch (part.kind) {
      case PromptPart::Kind::Text: break;
      case PromptPart::Kind::Rendered:
        throw std::invalid_argument("encode_prompt: a Rendered part must be the whole prompt");
      case PromptPart::Kind::Bos: id = tokenizer.bos_id(); break;
      case PromptPart::Kind::Eos: id = tokenizer.eos_id(); break;
      case PromptPart::Kind::Special: id = special_id(tokenizer, part.text); break;
    }
    if (id < 0) {
      text += part.text;
      continue;
    }
    flush_text();
    ids.push_back(id);
  }
  flush_text();
  return ids;
}

}  // namespace astrai
