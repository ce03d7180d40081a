// CUDA's atomic functions for the emulated device. One launch runs at a time,
// on one OS thread, and its CUDA threads switch only at barriers, so a plain
// read-modify-write is atomic here. These are out of line, in a file built
// without the memory-access instrumentation of the kernel files, so the race
// detector never sees an atomic as a plain access: two blocks adding into one
// counter with atomicAdd is no race.
#include <algorithm>

#include "cuda/emulation/access_context.h"
#include "cuda/emulation/kernel_runtime.h"

namespace astrai::emu {
namespace {

// Applies `update` to *address; returns the old value, as CUDA's atomics do.
template <typename T, typename F>
[[gnu::always_inline]] inline T read_modify_write(T* address, F update, const void* pc) {
  memory_atomic_access(address, sizeof(T), pc);
  const T old = *address;
  *address = update(old);
  return old;
}

}  // namespace

float atomic_add(float* a, float v) { return read_modify_write(a, [v](float o) { return o + v; }, __builtin_return_address(0)); }
int atomic_add(int* a, int v) {
  // Two's complement wrap-around, as the GPU's integer add (no signed overflow UB here).
  return read_modify_write(a, [v](int o) { return int(unsigned(o) + unsigned(v)); }, __builtin_return_address(0));
}
unsigned atomic_add(unsigned* a, unsigned v) { return read_modify_write(a, [v](unsigned o) { return o + v; }, __builtin_return_address(0)); }
unsigned long long atomic_add(unsigned long long* a, unsigned long long v) {
  return read_modify_write(a, [v](unsigned long long o) { return o + v; }, __builtin_return_address(0));
}
int atomic_max(int* a, int v) { return read_modify_write(a, [v](int o) { return std::max(o, v); }, __builtin_return_address(0)); }
unsigned atomic_max(unsigned* a, unsigned v) { return read_modify_write(a, [v](unsigned o) { return std::max(o, v); }, __builtin_return_address(0)); }
int atomic_min(int* a, int v) { return read_modify_write(a, [v](int o) { return std::min(o, v); }, __builtin_return_address(0)); }
unsigned atomic_min(unsigned* a, unsigned v) { return read_modify_write(a, [v](unsigned o) { return std::min(o, v); }, __builtin_return_address(0)); }
int atomic_cas(int* a, int compare, int v) { return read_modify_write(a, [=](int o) { return o == compare ? v : o; }, __builtin_return_address(0)); }
unsigned atomic_cas(unsigned* a, unsigned compare, unsigned v) {
  return read_modify_write(a, [=](unsigned o) { return o == compare ? v : o; }, __builtin_return_address(0));
}
unsigned long long atomic_cas(unsigned long long* a, unsigned long long compare, unsigned long long v) {
  return read_modify_write(a, [=](unsigned long long o) { return o == compare ? v : o; }, __builtin_return_address(0));
}
int atomic_exch(int* a, int v) { return read_modify_write(a, [v](int) { return v; }, __builtin_return_address(0)); }
unsigned atomic_exch(unsigned* a, unsigned v) { return read_modify_write(a, [v](unsigned) { return v; }, __builtin_return_address(0)); }
float atomic_exch(float* a, float v) { return read_modify_write(a, [v](float) { return v; }, __builtin_return_address(0)); }

}  // namespace astrai::emu
