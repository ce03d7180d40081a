// Llama 2 chat, as Meta's reference code and the Hugging Face template lay it
// out (contents stripped of surrounding whitespace):
//
//   <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s><s>[INST] {user} [/INST]
//
// The system prompt (all system messages joined by "\n") goes into the first
// user turn; when an assistant turn comes first, or there is no user turn, an
// empty user turn carries it. The leading <s> is the encoder's BOS.
#include "engine/chat/chat_templates.h"

namespace astrai {
namespace {

using chat_detail::append_special;
using chat_detail::append_text;
using chat_detail::trim;

class Llama2Template : public ChatTemplate {
 public:
  std::string name() const override { return "llama2"; }

  Prompt render(std::span<const ChatMessage> messages) const override {
    std::string system;
    for (const auto& m : messages)
      if (m.role == ChatRole::System) {
        if (!system.empty()) system += '\n';
        system += trim(m.content);
      }
    Prompt prompt;
    bool first_block = true;
    auto user_turn = [&](const std::string& content) {
      if (!first_block) append_special(prompt, PromptPart::Kind::Bos);
      first_block = false;
      std::string text = trim(content);
      if (!system.empty()) text = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + text;
      system.clear();
      append_text(prompt, "[INST] " + text + " [/INST]");
    };
    for (size_t i = 0; i < messages.size(); ++i) {
      const ChatMessage& m = messages[i];
      if (m.role == ChatRole::User) {
        user_turn(m.content);
      } else if (m.role == ChatRole::Assistant) {
        if (first_block) user_turn("");
        const bool open = i + 1 == messages.size();
        std::string answer(1, ' ');
        answer += trim(m.content);
        if (!open) answer += ' ';
        append_text(prompt, answer);
        if (!open) append_special(prompt, PromptPart::Kind::Eos);
      }
    }
    if (first_block) user_turn("");  // only system messages
    return prompt;
  }
};

}  // namespace

std::unique_ptr<ChatTemplate> make_llama2_template() { return std::make_unique<Llama2Template>(); }

}  // namespace astrai
