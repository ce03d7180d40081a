// The callbacks clang's -fsanitize-coverage=trace-loads,trace-stores puts
// before every load and store of the kernel files (cuda/meson.build), and
// their classification into the memory trace (memory_trace.h). This file is
// compiled without that instrumentation, as is everything outside the kernels.
#include <dlfcn.h>
#include <link.h>

#include <mutex>
#include <unordered_map>

#include "cuda/emulation/access_context.h"
#include "cuda/emulation/block_runner.h"
#include "cuda/emulation/device_constants.h"
#include "cuda/emulation/race_detector.h"

namespace astrai::emu {

thread_local constinit AccessContext t_access;

namespace {

MemoryObserver* g_observer = nullptr;

// Per launch: whether each page the kernel touched holds device memory.
struct DevicePages {
  std::unordered_map<uintptr_t, bool> pages;
  struct Slot {
    uintptr_t page = ~uintptr_t(0);
    bool is_device = false;
  } cache[kPageCacheSlots];
  void clear() {
    pages.clear();
    for (Slot& slot : cache) slot = Slot{};
  }
};
thread_local DevicePages t_device_pages;

bool on_device_page(uintptr_t address) {
  DevicePages& d = t_device_pages;
  const uintptr_t page = address / kHostPageBytes;
  DevicePages::Slot& slot = d.cache[page % kPageCacheSlots];
  if (slot.page == page) return slot.is_device;
  auto [it, inserted] = d.pages.try_emplace(page, false);
  if (inserted) it->second = is_device_address(reinterpret_cast<const void*>(address));
  slot = DevicePages::Slot{page, it->second};
  return it->second;
}

void deliver(uintptr_t address, size_t bytes, bool store, bool atomic, const void* pc) {
  const AccessContext& c = t_access;
  if (address >= c.stack_begin && address < c.stack_end) return;  // the thread's own locals
  MemorySpace space;
  if ((address >= c.dynamic_begin && address < c.dynamic_end) || (address >= c.static_begin && address < c.static_end))
    space = MemorySpace::Shared;
  else if (on_device_page(address))
    space = MemorySpace::Global;
  else
    return;
  if (!atomic && race_detection()) race_check(address, bytes, store, space, pc);
  if (g_observer != nullptr)
    g_observer->access(MemoryAccess{reinterpret_cast<const void*>(address), uint32_t(bytes), store, atomic, space,
                                    c.block, c.thread, pc});
}

// This OS thread's block of static TLS (the main program's PT_TLS segment,
// where the kernels' `static thread_local` __shared__ variables live).
struct TlsBlock {
  uintptr_t begin = 0, end = 0;
};

TlsBlock find_static_tls() {
  TlsBlock found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_tls_data == nullptr) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_TLS) {
            auto* block = static_cast<TlsBlock*>(out);
            block->begin = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
            block->end = block->begin + info->dlpi_phdr[i].p_memsz;
            return 1;  // the first module with TLS is the main program
          }
        return 0;
      },
      &found);
  return found;
}

}  // namespace

bool memory_tracing_wanted() { return race_detection() || g_observer != nullptr; }

void set_memory_observer(MemoryObserver* observer) { g_observer = observer; }

void memory_launch_begin(const KernelLaunch& launch) {
  thread_local const TlsBlock tls = find_static_tls();
  t_access.static_begin = tls.begin;
  t_access.static_end = tls.end;
  t_device_pages.clear();
  if (race_detection()) race_launch_begin(launch);
  if (g_observer != nullptr) g_observer->launch_begin(launch);
}

void memory_launch_end(const KernelLaunch& launch) {
  t_access.active = false;
  if (race_detection()) race_launch_end();
  if (g_observer != nullptr) g_observer->launch_end(launch);
}

void memory_block_begin() {
  if (race_detection()) race_block_begin();
}

void memory_block_end() {
  if (race_detection()) race_block_end();
}

void memory_access_by_emulator(const void* address, size_t bytes, bool store, const void* pc) {
  if (t_access.active) deliver(reinterpret_cast<uintptr_t>(address), bytes, store, false, pc);
}

void memory_async_copy_issued(const void* shared_destination, size_t bytes, const void* pc) {
  const auto a = reinterpret_cast<uintptr_t>(shared_destination);
  const AccessContext& c = t_access;
  const bool shared = (a >= c.dynamic_begin && a < c.dynamic_end) || (a >= c.static_begin && a < c.static_end);
  if (!shared) fault_from_fiber("cp.async into memory that is not shared memory, issued at " + describe_code_address(pc));
  if (c.active && race_detection()) race_copy_pending(a, bytes, pc, true);
}

void memory_async_copy_completed(const void* shared_destination, size_t bytes) {
  if (t_access.active && race_detection())
    race_copy_pending(reinterpret_cast<uintptr_t>(shared_destination), bytes, nullptr, false);
}

void memory_atomic_access(const void* address, size_t bytes, const void* pc) {
  if (t_access.active) deliver(reinterpret_cast<uintptr_t>(address), bytes, true, true, pc);
}

}  // namespace astrai::emu

// The instrumentation's entry points (names and signatures from clang's
// SanitizerCoverage documentation). The return address is the instruction's
// place in the kernel.
#define ASTRAI_EMU_ACCESS_HOOK(kind, n, store)                                                      \
  extern "C" void __sanitizer_cov_##kind##n(const void* address) {                                \
    if (!::astrai::emu::t_access.active) return;                                                    \
    ::astrai::emu::deliver(reinterpret_cast<uintptr_t>(address), n, store, false,                  \
                           __builtin_return_address(0));                                            \
  }
namespace astrai::emu {
ASTRAI_EMU_ACCESS_HOOK(load, 1, false)
ASTRAI_EMU_ACCESS_HOOK(load, 2, false)
ASTRAI_EMU_ACCESS_HOOK(load, 4, false)
ASTRAI_EMU_ACCESS_HOOK(load, 8, false)
ASTRAI_EMU_ACCESS_HOOK(load, 16, false)
ASTRAI_EMU_ACCESS_HOOK(store, 1, true)
ASTRAI_EMU_ACCESS_HOOK(store, 2, true)
ASTRAI_EMU_ACCESS_HOOK(store, 4, true)
ASTRAI_EMU_ACCESS_HOOK(store, 8, true)
ASTRAI_EMU_ACCESS_HOOK(store, 16, true)
}  // namespace astrai::emu
#undef ASTRAI_EMU_ACCESS_HOOK
