// The errors a template raises. A TemplateError names the problem and the
// template line; jinja2 raises in the same situations (syntax errors,
// undefined attribute access, type errors), so a prompt is never rendered
// where Hugging Face's apply_chat_template would fail, and a feature this
// engine does not support is refused by name instead of rendered wrongly.
#pragma once

#include <stdexcept>
#include <string>

namespace astrai::jinja {

class TemplateError : public std::runtime_error {
 public:
  TemplateError(const std::string& message, int line)
      : std::runtime_error("chat template line " + std::to_string(line) + ": " + message), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

// raise_exception(message) called by the template (e.g. Mistral's check that
// roles alternate): what() is the template's own message, prefixed as above.
class RaisedException : public TemplateError {
 public:
  RaisedException(const std::string& message, int line)
      : TemplateError("raise_exception: " + message, line), message_(message) {}
  const std::string& template_message() const { return message_; }

 private:
  std::string message_;
};

}  // namespace astrai::jinja

namespace astrai::jinja {

// Thrown by the raise_exception global, which does not know the line; the
// renderer turns it into a RaisedException at the line of the call.
struct RaiseRequest {
  std::string message;
};

}  // namespace astrai::jinja
