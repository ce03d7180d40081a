// Tokens -> statements, following jinja2's parser: the same operator
// precedence (or < and < not < comparisons and `in` < + - < ~ < * / // % <
// ** < unary - + < filters, tests and calls < attribute and item access), the
// same statement forms. Tags outside the supported set (include, extends,
// block, import, call, filter, with, do, recursive loops...) are refused with a
// TemplateError naming the tag and its line.
#pragma once

#include <vector>

#include "engine/jinja/ast.h"
#include "engine/jinja/lexer.h"

namespace astrai::jinja {

Body parse(const std::vector<Token>& tokens);

}  // namespace astrai::jinja
