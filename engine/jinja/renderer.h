// Walks the parsed template and writes its output, with jinja2's runtime
// semantics: scopes (a for loop body and a macro get their own, if does not),
// the loop object, namespace assignment, break/continue, macros, Python
// operators, Undefined.
#pragma once

#include <string>

#include "engine/jinja/ast.h"
#include "engine/jinja/render_limits.h"
#include "engine/jinja/value.h"

namespace astrai::jinja {

// Throws TemplateError (with the line) on any error, a render beyond
// `limits` included; RaisedException for raise_exception().
std::string render(const Body& body, const DictObject& context, const RenderLimits& limits);

}  // namespace astrai::jinja
