// Fuzz target: the Jinja engine (engine/jinja/) on any template source.
//
// A chat template is model-file content, and model files come from anywhere:
// whatever its bytes, parsing and rendering it must end, within the render
// limits, in a prompt or a TemplateError, never in a crash, a hang, a
// sanitizer report or an allocation out of proportion to the limits.
//
// Input: the template source, rendered with a fixed conversation (system,
// user, assistant and user messages, with bos_token, eos_token and
// add_generation_prompt) as apply_chat_template would. The limits are small
// (docs/chat-templates.md, "Limits") so that every input ends in well under
// libFuzzer's per-input timeout, under the sanitizers too.
//
// Properties:
//  1. Template() and render() throw nothing but jinja::TemplateError
//     (RaisedException included);
//  2. the output is no larger than the limit on strings;
//  3. a template without any "{" has no tags, and renders to its own text as
//     jinja2's lexer leaves it: every newline ("\r\n", "\r", "\n") becomes
//     "\n", and one final newline is dropped (keep_trailing_newline=False).
#include <cstdio>
#include <exception>
#include <string>
#include <typeinfo>

#include <nlohmann/json.hpp>

#include "engine/jinja/template.h"
#include "tests/fuzz/fuzz_support.h"

namespace astrai::fuzz {
namespace {

const nlohmann::ordered_json& conversation() {
  static const nlohmann::ordered_json context = {
      {"messages",
       {{{"role", "system"}, {"content", "You are terse."}},
        {{"role", "user"}, {"content", "Hello, caf\u00e9! {{ not a tag }}"}},
        {{"role", "assistant"}, {"content", "Hi."}},
        {{"role", "user"}, {"content", "Count: 1 2 3"}}}},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"},
      {"add_generation_prompt", true}};
  return context;
}

// Property 3's oracle, from jinja2's lexer (newline_re.split, then the last
// empty line dropped). Written here on purpose rather than calling lexer.cpp's
// normalize_source: an oracle that is the code under test cannot fail.
std::string jinja2_plain_text(const std::string& source) {
  std::string out;
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

jinja::RenderLimits fuzz_limits() {
  jinja::RenderLimits limits;
  limits.max_steps = 200'000;
  limits.max_string_bytes = 1 << 16;
  limits.max_list_items = 1 << 12;
  limits.max_seconds = 2;
  return limits;
}

}  // namespace

int fuzz_jinja(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  const jinja::RenderLimits limits = fuzz_limits();
  try {
    const jinja::Template t(source);
    const std::string out = t.render(conversation(), limits);
    check(out.size() <= limits.max_string_bytes, "the output is within the string limit");
    if (source.find('{') == std::string::npos)
      check(out == jinja2_plain_text(source), "a template without tags renders as its text");
  } catch (const jinja::TemplateError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz finding: a template raised %s: %s\n", typeid(e).name(), e.what());
    std::fflush(stderr);
    std::abort();
  }
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_jinja)
