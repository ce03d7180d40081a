// The Jinja engine's render limits (engine/jinja/render_limits.h): a
// template from a model file that would loop without end or grow a string
// or list without bound is a TemplateError naming the limit, raised before
// the work (or the allocation) is done; templates within the limits render
// as before. Small limits keep each case fast; the defaults are tested only
// for being far above what a real template needs with a long conversation.
//
// No case here depends on the machine's speed (docs/testing.md): the cases
// for the step and size bounds turn the wall clock off (kNoClockLimit), so a
// sanitized -O0 build on a busy machine cannot hit the 10 s limit first, and
// the clock limit is tested on its own with a limit of 0.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/jinja/render_limits.h"
#include "engine/jinja/template.h"

// In a namespace of its own, TEST_CASEs too: the test program is a unity
// build (tests/meson.build), where other files have helpers of the same names.
namespace test_jinja_limits {

using astrai::jinja::RenderLimits;
using astrai::jinja::Template;
using astrai::jinja::TemplateError;
using json = nlohmann::ordered_json;

// The given limits without the wall clock's: only the deterministic bounds.
RenderLimits without_clock(RenderLimits limits = {}) {
  limits.max_seconds = RenderLimits::kNoClockLimit;
  return limits;
}

RenderLimits small_limits() {
  RenderLimits limits;
  limits.max_steps = 100'000;
  limits.max_string_bytes = 1 << 20;
  limits.max_list_items = 10'000;
  return without_clock(limits);
}

// The TemplateError's message (fails when the render succeeds).
std::string error_of(const std::string& source, const RenderLimits& limits = small_limits(),
                     const json& context = json::object()) {
  try {
    const std::string out = Template(source).render(context, limits);
    FAIL("rendered " << out.size() << " bytes without an error");
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}


TEST_CASE("Jinja limits: loops that never end are stopped by the step budget", "[jinja][limits]") {
  // 10^10 iterations of an empty body: every iteration counts, bodies or not.
  CHECK_THAT(error_of("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"),
             Catch::Contains("more than 100000 steps"));
  // Macros that call each other in a loop: the steps are the loop's and the calls'.
  CHECK_THAT(error_of("{% macro f(n) %}{{ n }}{% endmacro %}{% for i in range(100000) %}{{ f(i) }}{% endfor %}"),
             Catch::Contains("steps"));
  // The error carries the line of the statement that ran out.
  CHECK_THAT(error_of("x\n{% for a in range(100000) %}{{ a }}{% endfor %}"), Catch::Contains("line 2"));
}

TEST_CASE("Jinja limits: strings and lists that grow without bound are refused before they are built",
          "[jinja][limits]") {
  // Doubling: 2^40 bytes after 40 passes, refused once past 1 MiB.
  CHECK_THAT(error_of("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
                      "{% endfor %}{{ ns.s | length }}"),
             Catch::Contains("string larger than") && Catch::Contains("1048576 bytes"));
  CHECK_THAT(error_of("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
                      "{% endfor %}"),
             Catch::Contains("string larger than"));
  // Repetition is checked before the product is computed (10^15 bytes would
  // otherwise be requested from the allocator).
  CHECK_THAT(error_of("{{ 'x' * 1000000000000000 }}"), Catch::Contains("string larger than"));
  CHECK_THAT(error_of("{{ ('x' * 1000) * 1000000000000000000 }}"), Catch::Contains("string larger than"));
  CHECK_THAT(error_of("{{ [1, 2] * 1000000000000 }}"), Catch::Contains("list larger than this engine's limit of 10000 items"));
  CHECK_THAT(error_of("{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}"
                      "{% endfor %}"),
             Catch::Contains("list larger than"));
  // replace, join and indent grow their result as they build it.
  CHECK_THAT(error_of("{{ ('a' * 2000).replace('', 'b' * 1000) }}"), Catch::Contains("string larger than"));
  CHECK_THAT(error_of("{{ ('a' * 2000).replace('a', 'b' * 1000) }}"), Catch::Contains("string larger than"));
  CHECK_THAT(error_of("{{ ('a' * 2000) | replace('a', 'b' * 1000) }}"), Catch::Contains("string larger than"));
  CHECK_THAT(error_of("{{ ('x' * 1000).join(['y'] * 5000) }}"), Catch::Contains("string larger than"));
  CHECK_THAT(error_of("{{ (['y' * 1000] * 5000) | join(',') }}"), Catch::Contains("string larger than"));
  CHECK_THAT(error_of("{{ ('a\\n' * 5000) | indent(1000) }}"), Catch::Contains("string larger than"));
  CHECK_THAT(error_of("{{ 'a' | indent(100000000000) }}"), Catch::Contains("string larger than"));
  // The output itself: many small appends.
  CHECK_THAT(error_of("{% for i in range(5000) %}{{ 'z' * 1000 }}{% endfor %}"), Catch::Contains("string larger than"));
  // A wide tojson indent multiplies the output by the nesting depth.
  CHECK_THAT(error_of("{{ [[[1]]] | tojson(indent=1000000000) }}"),
             Catch::Contains("tojson indent wider than 64"));
}

TEST_CASE("Jinja limits: values nest at most 512 levels, and never contain themselves", "[jinja][limits]") {
  // Each walk over a value (printing, comparing, tojson, freeing it) recurses
  // per level: 100,000 levels overflowed the stack before this limit.
  for (const char* use : {"{{ ns.l }}", "{{ ns.l | tojson }}", "{{ ns.l == ns.l }}", "{{ ns.l | length }}"})
    CHECK_THAT(error_of(std::string("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
                                    "{% endfor %}") + use,
                        without_clock()),
               Catch::Contains("nest deeper than 512 levels"));
  CHECK_THAT(error_of("{% set ns = namespace(d={}) %}{% for i in range(1000) %}{% set ns.d = {'k': ns.d} %}"
                      "{% endfor %}"),
             Catch::Contains("nest deeper than 512 levels"));
  // 512 levels are fine.
  CHECK(Template("{% set ns = namespace(l=[]) %}{% for i in range(511) %}{% set ns.l = [ns.l] %}{% endfor %}"
                 "{{ ns.l | tojson | length }}")
            .render(json::object(), without_clock()) == "1024");
  // A namespace holding itself would be a cycle (never freed, printed forever).
  CHECK_THAT(error_of("{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns }}"),
             Catch::Contains("namespace (or a list or dict holding one) as a namespace attribute"));
  CHECK_THAT(error_of("{% set ns = namespace(a=1) %}{% set ns.l = [1, {'x': ns}] %}{{ ns }}"),
             Catch::Contains("as a namespace attribute"));
  CHECK_THAT(error_of("{% set a = namespace() %}{% set b = namespace(inner=a) %}"),
             Catch::Contains("as a namespace attribute"));
  // A list may hold a namespace (templates pass them around); printing it works.
  CHECK(Template("{% set ns = namespace(a=1) %}{{ [ns][0].a }}").render(json::object()) == "1");
}

TEST_CASE("Jinja limits: a render past its time limit stops", "[jinja][limits]") {
  // Within the step budget but not the clock's: each step works on a 1 MB
  // string (a find() that fails), and a zero deadline expires at the first
  // check (every 4096 steps).
  RenderLimits limits;
  limits.max_seconds = 0;
  CHECK_THAT(error_of("{% set s = 'a' * 1000000 %}{% for i in range(100000) %}{{ s.find('b') }}{% endfor %}", limits),
             Catch::Contains("longer than 0.0 s"));
}

TEST_CASE("Jinja limits: templates within the limits render as before", "[jinja][limits]") {
  // The limits are inclusive: exactly max_string_bytes is allowed.
  RenderLimits limits = small_limits();
  CHECK(Template("{{ 'x' * 1048576 }}").render(json::object(), limits).size() == 1048576);
  CHECK(Template("{{ ([0] * 10000) | length }}").render(json::object(), limits) == "10000");
  CHECK(Template("{{ {'a': [1, {'b': 2}]} | tojson(indent=64) }}").render(json::object(), limits).size() > 64);
  // A nested limit does not leak out: a render after a failing one gets the
  // defaults (a render of one step never reaches the clock's first check).
  CHECK_THROWS_AS(Template("{{ 'x' * 2000000 }}").render(json::object(), limits), TemplateError);
  CHECK(Template("{{ 'x' * 2000000 }}").render(json::object()).size() == 2000000);
}

TEST_CASE("Jinja limits: the defaults leave room for a long conversation in a real template", "[jinja][limits]") {
  // A ChatML template that walks the messages twice, as Qwen's does (once
  // backwards with a namespace to find the last user turn), over 20,000
  // messages: well within the default step budget, which allows ~100 times
  // more (docs/chat-templates.md, "Limits"). The clock is off: how long the
  // render takes depends on the machine (seconds under ASan at -O0 on a busy
  // one), the steps and sizes it needs do not.
  const std::string source =
      "{%- set ns = namespace(last_user=-1) -%}"
      "{%- for m in messages[::-1] -%}{%- if ns.last_user < 0 and m.role == 'user' -%}"
      "{%- set ns.last_user = messages | length - 1 - loop.index0 -%}{%- endif -%}{%- endfor -%}"
      "{%- for m in messages -%}{{ '<|im_start|>' + m.role + '\\n' + m.content | trim + '<|im_end|>\\n' }}"
      "{%- endfor -%}{%- if add_generation_prompt %}<|im_start|>assistant\\n{% endif -%}";
  json messages = json::array();
  for (int i = 0; i < 20000; ++i)
    messages.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", "message " + std::to_string(i)}});
  RenderLimits hundredth = without_clock();
  hundredth.max_steps = RenderLimits{}.max_steps / 100;
  const std::string out = Template(source).render(json{{"messages", messages}, {"add_generation_prompt", true}}, hundredth);
  CHECK(out.size() > 20000 * 20);
}

TEST_CASE("Jinja limits: the default limits are the documented ones, the clock's included", "[jinja][limits]") {
  // docs/chat-templates.md, "Limits". The default clock limit is checked as a
  // value here; what it does is the time-limit case above.
  const RenderLimits defaults;
  CHECK(defaults.max_steps == 200'000'000);
  CHECK(defaults.max_string_bytes == size_t(64) << 20);
  CHECK(defaults.max_list_items == size_t(1) << 22);
  CHECK(defaults.max_seconds == 10.0);
  CHECK(without_clock().max_seconds == RenderLimits::kNoClockLimit);
}

}  // namespace test_jinja_limits
