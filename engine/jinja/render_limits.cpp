// The current render's limits (see render_limits.h).
#include "engine/jinja/render_limits.h"

#include <stdexcept>
#include <string>

namespace astrai::jinja {

namespace {

thread_local const RenderLimits* active = nullptr;

[[noreturn]] void too_large(const std::string& what, size_t limit) {
  throw std::runtime_error("the template builds a " + what + " larger than this engine's limit of " +
                           std::to_string(limit) + (what == "string" ? " bytes" : " items") +
                           " (a loop that grows it without end?)");
}

}  // namespace

const RenderLimits& current_render_limits() {
  static const RenderLimits defaults;
  return active ? *active : defaults;
}

void check_string_size(size_t bytes) {
  if (bytes > current_render_limits().max_string_bytes) too_large("string", current_render_limits().max_string_bytes);
}

void check_list_size(size_t items) {
  if (items > current_render_limits().max_list_items) too_large("list", current_render_limits().max_list_items);
}

void check_repeated_size(size_t each, int64_t count, bool list) {
  if (count <= 0 || each == 0) return;
  const size_t limit = list ? current_render_limits().max_list_items : current_render_limits().max_string_bytes;
  // each * count <= limit exactly when each <= floor(limit / count).
  if (uint64_t(count) > limit || each > limit / size_t(count)) too_large(list ? "list" : "string", limit);
}

ScopedRenderLimits::ScopedRenderLimits(const RenderLimits& limits) : previous_(active) { active = &limits; }
ScopedRenderLimits::~ScopedRenderLimits() { active = previous_; }

}  // namespace astrai::jinja
