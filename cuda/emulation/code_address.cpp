// describe_code_address (memory_trace.h): a kernel instruction's source line,
// from the line tables the kernel files are compiled with
// (-gline-tables-only), read by binutils' addr2line. Only fault reports and
// tools call it, so a process per address is cheap enough; results are cached.
#include <dlfcn.h>
#include <elf.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/emulation/memory_trace.h"

namespace astrai::emu {
namespace {

// Whether the main program is position-independent (addr2line then wants
// the offset from its load address, as for a shared library).
bool main_program_is_pie() {
  FILE* f = std::fopen("/proc/self/exe", "rb");
  if (f == nullptr) return true;
  Elf64_Ehdr header{};
  const bool read = std::fread(&header, sizeof header, 1, f) == 1;
  std::fclose(f);
  return !read || header.e_type == ET_DYN;
}

// addr2line -f -i -C: per frame, innermost first, a function line then a
// "file:line" line. A line the compiler could not attribute (code it hoisted
// or merged: line 0, printed "?") gets its function's name added.
std::vector<std::string> addr2line(const std::string& file, uintptr_t address) {
  std::ostringstream command;
  command << "addr2line -f -i -C -e '" << file << "' 0x" << std::hex << address << " 2>/dev/null";
  std::vector<std::string> raw;
  FILE* p = popen(command.str().c_str(), "r");
  if (p == nullptr) return {};
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, p) != nullptr) {
    std::string line(buffer);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    raw.push_back(line);
  }
  pclose(p);
  std::vector<std::string> frames;
  for (size_t i = 0; i + 1 < raw.size(); i += 2) {
    const std::string& function = raw[i];
    std::string place = raw[i + 1];
    if (const size_t d = place.find(" (discriminator"); d != std::string::npos) place.erase(d);
    if (place.rfind("??", 0) == 0) continue;
    // "/src/build/../cuda/x.cu:12" -> "/src/cuda/x.cu:12"
    const size_t colon = place.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string line_number = place.substr(colon + 1);
    place = std::filesystem::path(place.substr(0, colon)).lexically_normal().string() + place.substr(colon);
    if (line_number == "?" || line_number == "0") place += " (a line the compiler merged, in " + function + ")";
    frames.push_back(place);
  }
  return frames;
}

// The object file holding `code` and the address addr2line wants for it.
bool locate(const void* code, std::string& file, uintptr_t& address) {
  Dl_info info{};
  if (dladdr(code, &info) == 0 || info.dli_fname == nullptr) return false;
  const uintptr_t at = reinterpret_cast<uintptr_t>(code);
  const uintptr_t base = reinterpret_cast<uintptr_t>(info.dli_fbase);
  Dl_info main_info{};
  const bool in_main = dladdr(reinterpret_cast<const void*>(&main_program_is_pie), &main_info) != 0 &&
                       main_info.dli_fbase == info.dli_fbase;
  // (Not "/proc/self/exe" itself: in addr2line's process that names addr2line.)
  file = in_main ? std::filesystem::read_symlink("/proc/self/exe").string() : info.dli_fname;
  address = (in_main && !main_program_is_pie()) ? at : at - base;
  return true;
}

std::string describe(const void* pc) {
  std::ostringstream unknown;
  unknown << pc << " (no line information)";
  std::string file;
  uintptr_t address = 0;
  if (!locate(pc, file, address)) return unknown.str();
  // The return address follows the call: look up the call instruction itself.
  const std::vector<std::string> frames = addr2line(file, address - 1);
  if (frames.empty()) return unknown.str();
  // addr2line -i: the innermost inlined frame first, the enclosing function's line last.
  std::string out = frames.front();
  for (size_t i = 1; i < frames.size(); ++i) out += " (inlined in " + frames[i] + ")";
  return out;
}

}  // namespace

std::string describe_code_address(const void* pc) {
  static std::mutex mutex;
  static std::map<const void*, std::string> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(pc);
  if (it == cache.end()) it = cache.emplace(pc, describe(pc)).first;
  return it->second;
}

std::string code_function_name(const void* function) {
  static std::mutex mutex;
  static std::map<const void*, std::string> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(function); it != cache.end()) return it->second;
  std::string name;
  std::string file;
  uintptr_t address = 0;
  if (locate(function, file, address)) {
    std::ostringstream command;
    command << "addr2line -f -C -e '" << file << "' 0x" << std::hex << address << " 2>/dev/null";
    if (FILE* p = popen(command.str().c_str(), "r")) {
      char buffer[4096];
      if (std::fgets(buffer, sizeof buffer, p) != nullptr) name = buffer;
      pclose(p);
    }
    while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
    if (name == "??") name.clear();
  }
  cache.emplace(function, name);
  return name;
}

}  // namespace astrai::emu
