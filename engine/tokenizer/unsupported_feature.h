// A tokenizer.json feature this engine does not run: the error naming it and
// the file it came from ("tokenizer.json: unsupported Split behavior ...").
// The readers of tokenizer.json's parts all refuse through it.
#pragma once

#include <stdexcept>
#include <string>

namespace astrai {

[[noreturn]] inline void unsupported(const std::string& origin, const std::string& what) {
  throw std::runtime_error(origin + ": unsupported " + what);
}

}  // namespace astrai
