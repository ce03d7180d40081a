// Template source -> tokens, as jinja2's lexer with the settings transformers
// uses (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False):
//  - text between tags, with the whitespace control applied: `{%-`/`{{-`/`{#-`
//    strip the whitespace before the tag, `-%}`/`-}}`/`-#}` the whitespace after;
//    lstrip_blocks strips spaces and tabs between a line start and `{%`/`{#`
//    (not `{{`; `{%+` opts out); trim_blocks drops the newline right after `%}`
//    and `#}` (`+%}` opts out);
//  - \r\n and \r become \n, and one trailing newline of the source is dropped;
//  - comments vanish; {% raw %}...{% endraw %} is text;
//  - inside tags: names, strings (Python escapes), integers, floats, operators;
//    the end delimiter only counts when brackets are balanced.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace astrai::jinja {

enum class TokenType { Text, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, End };

struct Token {
  TokenType type;
  std::string value;  // text, name, decoded string, operator, or the number's source
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0;
};

// Throws TemplateError (with the line) on an unterminated tag, comment or
// string, or a character that starts no token.
std::vector<Token> tokenize(std::string_view source);

}  // namespace astrai::jinja
