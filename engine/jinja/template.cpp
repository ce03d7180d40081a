// Template: lexer -> parser once, renderer per call.
#include "engine/jinja/template.h"

#include "engine/jinja/json_value.h"
#include "engine/jinja/lexer.h"
#include "engine/jinja/parser.h"
#include "engine/jinja/renderer.h"

namespace astrai::jinja {

Template::Template(std::string_view source) : body_(std::make_shared<const Body>(parse(tokenize(source)))) {}

std::string Template::render(const nlohmann::ordered_json& context, const RenderLimits& limits) const {
  if (!context.is_object()) throw TemplateError("the render context must be a JSON object", 0);
  Value v;
  try {
    v = from_json(context);
  } catch (const std::runtime_error& e) {
    throw TemplateError(std::string("render context: ") + e.what(), 0);
  }
  return jinja::render(*body_, v.as_dict(), limits);
}

std::string Template::render(const nlohmann::json& context, const RenderLimits& limits) const {
  return render(nlohmann::ordered_json::parse(context.dump()), limits);
}

}  // namespace astrai::jinja
