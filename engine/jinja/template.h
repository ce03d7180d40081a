// A Jinja template, parsed once and rendered many times, with the semantics
// of jinja2 as Hugging Face's apply_chat_template configures it
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols;
// tojson, raise_exception and strftime_now as transformers defines them).
// docs/chat-templates.md lists the supported subset; anything outside it is a
// TemplateError naming the feature and the line, never a different prompt.
//
//   astrai::jinja::Template t(source);                       // throws TemplateError
//   std::string prompt = t.render(context_json_object);      // throws TemplateError
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/jinja/ast.h"
#include "engine/jinja/error.h"
#include "engine/jinja/render_limits.h"

namespace astrai::jinja {

class Template {
 public:
  explicit Template(std::string_view source);

  // context: a JSON object whose keys are the template's variables. An
  // ordered_json keeps the key order a template sees when it iterates a dict
  // (Python keeps insertion order); nlohmann::json sorts keys.
  // A render beyond `limits` (render_limits.h) is a TemplateError.
  std::string render(const nlohmann::ordered_json& context, const RenderLimits& limits = {}) const;
  std::string render(const nlohmann::json& context, const RenderLimits& limits = {}) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace astrai::jinja
