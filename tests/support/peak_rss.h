// The process's peak resident set, for tests that bound what untrusted input
// can make the program allocate: a claimed count that is believed shows as
// growth of the peak (getrusage's ru_maxrss), once the memory is written to.
#pragma once

#include <sys/resource.h>

namespace astrai::test {

// The peak resident set of this process so far, in MiB.
inline long peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;  // Linux reports KiB
}

}  // namespace astrai::test
