// How the file-reading fuzz targets tell a clean rejection from a finding.
//
// The project's rule is that bad input gives std::runtime_error or
// std::invalid_argument with a message naming the problem. Any other exception
// escaping a reader is a finding too: std::bad_alloc means a corrupt count was
// trusted with an allocation, std::out_of_range / std::length_error /
// std::logic_error mean an unchecked path was stopped only by accident.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <stdexcept>
#include <typeinfo>

namespace astrai::fuzz {

// Runs fn(); swallows the two clean error types, aborts on anything else.
template <class Fn>
void expect_clean_errors(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz finding: unexpected exception %s: %s\n", typeid(e).name(), e.what());
    std::fflush(stderr);
    std::abort();
  }
}

}  // namespace astrai::fuzz
