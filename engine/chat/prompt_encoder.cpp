#include "engine/chat/prompt_encoder.h"

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
  std::vector<int> ids{tokenizer.bos_id()};
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
