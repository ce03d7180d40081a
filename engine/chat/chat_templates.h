// The concrete chat templates, one file each; make_chat_template() picks one.
#pragma once

#include <memory>
#include <string>

#include "engine/chat/chat_template.h"

namespace astrai {

std::unique_ptr<ChatTemplate> make_plain_template();
std::unique_ptr<ChatTemplate> make_llama2_template();
std::unique_ptr<ChatTemplate> make_chatml_template();
std::unique_ptr<ChatTemplate> make_llama3_template();

// Helpers the templates share.
namespace chat_detail {
// s without leading and trailing ASCII whitespace (Jinja's trim/strip).
std::string trim(const std::string& s);
// Appends text to the prompt, merging it into a trailing text part.
void append_text(Prompt& prompt, const std::string& text);
void append_special(Prompt& prompt, PromptPart::Kind kind, const std::string& piece = "");
}  // namespace chat_detail

}  // namespace astrai
