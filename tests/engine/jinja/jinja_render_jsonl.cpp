// Test helper for test_jinja_random_templates.py: renders many templates in
// one process. Each input line is {"template": str, "context": {...}}; each
// output line is {"ok": true, "output": str} or {"ok": false, "error": str}.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/jinja/template.h"

int main() {
  for (std::string line; std::getline(std::cin, line);) {
    nlohmann::ordered_json result;
    try {
      const auto request = nlohmann::ordered_json::parse(line);
      const astrai::jinja::Template t(request.at("template").get<std::string>());
      result = {{"ok", true}, {"output", t.render(request.at("context"))}};
    } catch (const std::exception& e) {
      result = {{"ok", false}, {"error", e.what()}};
    }
    std::cout << result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}
