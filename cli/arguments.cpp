#include "cli/arguments.h"

#include <limits>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace astrai::cli {
namespace {

// "--top-k expects an integer, got 'ten'"
std::string bad_value(const std::string& name, const char* expected, const std::string& value) {
  std::ostringstream msg;
  msg << name << " expects " << expected << ", got '" << value << "'";
  return msg.str();
}

}  // namespace

Arguments& Arguments::option(const std::string& name, const std::string& help, const std::string& fallback) {
  order_.push_back(name);
  specs_[name] = {help, fallback, false};
  return *this;
}

Arguments& Arguments::flag(const std::string& name, const std::string& help) {
  order_.push_back(name);
  specs_[name] = {help, "", true};
  return *this;
}

int Arguments::parse(std::span<const std::string_view> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg(args[i]);
    if (arg == "--help" || arg == "-h") {
      std::cout << usage();
      return 0;
    }
    const auto spec = specs_.find(arg);
    if (spec == specs_.end()) {
      std::cerr << "unknown argument '" << arg << "'\n\n" << usage();
      return 2;
    }
    if (spec->second.is_flag) {
      values_[arg] = std::string(1, '1');  // (a char* assignment trips GCC 12's false -Wrestrict)
      continue;
    }
    if (i + 1 >= args.size()) {
      std::cerr << "option " << arg << " needs a value\n\n" << usage();
      return 2;
    }
    values_[arg] = std::string(args[++i]);
  }
  return -1;
}

bool Arguments::has(const std::string& name) const { return values_.count(name) > 0; }

std::string Arguments::get(const std::string& name) const {
  if (auto v = values_.find(name); v != values_.end()) return v->second;
  return specs_.at(name).fallback;
}

long long Arguments::get_int(const std::string& name) const {
  const std::string value = get(name);
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) throw std::invalid_argument(bad_value(name, "an integer", value));
  return n;
}

double Arguments::get_double(const std::string& name) const {
  const std::string value = get(name);
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) throw std::invalid_argument(bad_value(name, "a number", value));
  return x;
}

std::string Arguments::usage() const {
  std::ostringstream out;
  out << "usage: " << summary_ << "\n\noptions:\n";
  for (const auto& name : order_) {
    const Spec& s = specs_.at(name);
    out << "  " << name << (s.is_flag ? "" : " VALUE") << "\n      " << s.help;
    if (!s.fallback.empty()) out << " (default: " << s.fallback << ")";
    out << "\n";
  }
  return out.str();
}

int run_reporting_errors(std::string_view command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::invalid_argument& e) {
    std::cerr << "astrai " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "astrai " << command << ": " << e.what() << "\n";
    return 1;
  }
}

std::string number_text(double value) {
  std::ostringstream text;
  text << std::setprecision(std::numeric_limits<float>::max_digits10) << value;
  for (int digits = 1; digits <= std::numeric_limits<double>::max_digits10; ++digits) {
    std::ostringstream shorter;
    shorter << std::setprecision(digits) << value;
    if (std::stod(shorter.str()) == value) return shorter.str();
  }
  return text.str();
}

}  // namespace astrai::cli
