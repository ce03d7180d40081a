// The grammar syntax of a tool-call family named as the tests name it
// ("hermes", "llama3", "mistral"): its row's (engine/chat_planning/tool_call_formats.h).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/chat_planning/tool_call_formats.h"

namespace astrai::test {

inline grammar::ToolCallSyntax tool_syntax(std::string_view family) {
  const auto named = tool_call_family_named(family);
  const ToolCallFormat* row = named ? tool_call_format(*named) : nullptr;
  if (!row) throw std::invalid_argument("no tool-call family named " + std::string(family));
  return row->syntax;
}

}  // namespace astrai::test
