// Bounds on one render. A chat template comes from a model file, and model
// files come from anywhere: a template whose loops never end, or whose
// strings double on every pass, must be a TemplateError, never a server
// thread that spins for hours or an allocation that takes the machine's
// memory. jinja2 has no such bounds (its sandbox caps only range() at
// 100000 items); these are far above what a chat template does with the
// largest conversation a request can carry (docs/chat-templates.md, "Limits").
//
// The renderer counts steps itself; the few operations that can grow a
// string or list multiplicatively (concatenation, repetition, replace, join,
// indent, tojson) check their result's size *before* building it, or as they
// build it, through check_string_size / check_list_size, which read the
// limits of the render running on this thread (filters and methods are free
// functions, called deep inside an evaluation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace astrai::jinja {

struct RenderLimits {
  // Statements executed plus expressions evaluated. A chat template spends a
  // few hundred per message; a 4 MiB request body holds at most about
  // 140,000 messages.
  int64_t max_steps = 200'000'000;
  // Any string a render builds, its output included.
  size_t max_string_bytes = size_t(64) << 20;
  // Any list a render builds.
  size_t max_list_items = size_t(1) << 22;
  // Wall-clock time. The step and size bounds are the deterministic ones;
  // this one catches what they cannot count: between two steps a builtin
  // works on strings and lists up to the sizes above (a find() over 64 MiB,
  // a sort of a long list), and a loop of such steps would otherwise run for
  // hours within the step budget. Checked every 4096 steps. 0 expires at the
  // first check; kNoClockLimit turns the clock off, leaving only the
  // deterministic bounds (the tests of those use it, so that a slow or busy
  // machine cannot end their render first; the server never does).
  double max_seconds = 10.0;

  static constexpr double kNoClockLimit = std::numeric_limits<double>::infinity();
};

// The limits of the render running on this thread; the defaults outside one.
const RenderLimits& current_render_limits();

// Throw std::runtime_error naming the limit when a string of `bytes` bytes
// (a list of `items` items) would exceed the current render's.
void check_string_size(size_t bytes);
void check_list_size(size_t items);
// The same for a string or list of `count` repetitions of `each`
// (overflow-safe: the product is never computed when it would be too large).
void check_repeated_size(size_t each, int64_t count, bool list);

// Makes `limits` the current render's for this object's lifetime (renders
// nest when a macro renders: the innermost wins, and the previous one comes
// back).
class ScopedRenderLimits {
 public:
  explicit ScopedRenderLimits(const RenderLimits& limits);
  ~ScopedRenderLimits();
  ScopedRenderLimits(const ScopedRenderLimits&) = delete;
  ScopedRenderLimits& operator=(const ScopedRenderLimits&) = delete;

 private:
  const RenderLimits* previous_;
};

}  // namespace astrai::jinja
