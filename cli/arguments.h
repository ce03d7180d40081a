// A small parser for `--name value` options and `--flag` switches, shared by
// the subcommands so that each states its options in one table.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace astrai::cli {

class Arguments {
 public:
  // `summary` is the usage line, e.g. "astrai generate --model M --prompt TEXT [options]".
  explicit Arguments(std::string summary) : summary_(std::move(summary)) {}

  // An option taking a value; `fallback` is its value when absent ("" = none).
  Arguments& option(const std::string& name, const std::string& help, const std::string& fallback = "");
  // A switch without value.
  Arguments& flag(const std::string& name, const std::string& help);

  // Parses args. On --help prints usage to stdout and returns 0; on a bad
  // argument prints the problem and usage to stderr and returns 2; returns -1
  // when parsing succeeded and the command should go on.
  int parse(std::span<const std::string_view> args);

  bool has(const std::string& name) const;  // given on the command line (or a flag set)
  std::string get(const std::string& name) const;  // the value, or its fallback
  // The value as a number; throws std::invalid_argument naming the option.
  long long get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  std::string usage() const;

 private:
  struct Spec {
    std::string help, fallback;
    bool is_flag;
  };
  std::string summary_;
  std::vector<std::string> order_;
  std::map<std::string, Spec> specs_;
  std::map<std::string, std::string> values_;
};

// Runs a command's body and turns its exceptions into the exit status, with
// the message on stderr: std::invalid_argument (bad options or input) is a
// usage error, 2; anything else a runtime failure, 1.
int run_reporting_errors(std::string_view command, const std::function<int()>& body);

// A default value as an option's text: the shortest that reads back as
// `value` ("1", "0.95"), so an option's default can be the engine's own.
std::string number_text(double value);

}  // namespace astrai::cli
