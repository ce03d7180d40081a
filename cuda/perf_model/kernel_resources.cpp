#include "cuda/perf_model/kernel_resources.h"

#include <sstream>
#include <stdexcept>

namespace astrai::cuda::perf {

namespace {

// "void ns::(anonymous namespace)::name<args>(params)" -> name, args.
void split_name(const std::string& full, std::string& base, std::string& args) {
  // The parameter list starts at the last '(' whose template depth is 0; the
  // name ends at the first '<' or '(' after the last "::" before it.
  std::size_t paren = std::string::npos;
  int depth = 0;
  for (std::size_t i = 0; i < full.size(); ++i) {
    if (full[i] == '<') ++depth;
    if (full[i] == '>') --depth;
    if (full[i] == '(' && depth == 0 && full.compare(i, 20, "(anonymous namespace") != 0) {
      paren = i;
      break;
    }
  }
  std::string head = full.substr(0, paren);
  std::size_t lt = head.find('<');
  std::string before = head.substr(0, lt);
  const std::size_t colons = before.rfind("::");
  const std::size_t space = before.rfind(' ');
  std::size_t start = colons != std::string::npos ? colons + 2 : space != std::string::npos ? space + 1 : 0;
  base = before.substr(start);
  args = lt == std::string::npos ? "" : head.substr(lt + 1, head.size() - lt - 2);
}

}  // namespace

std::vector<CompiledKernel> parse_kernel_resources(const std::string& tsv) {
  std::vector<CompiledKernel> out;
  std::istringstream in(tsv);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (number == 1 || line.empty()) continue;  // the header
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
    if (f.size() != 6) throw std::runtime_error("kernel resources, line " + std::to_string(number) + ": expected 6 fields");
    CompiledKernel k;
    k.name = f[0];
    k.file = f[5];
    try {
      k.resources = {std::stoi(f[1]), std::stoi(f[2]), std::stoi(f[3]) + std::stoi(f[4])};
    } catch (const std::exception&) {
      throw std::runtime_error("kernel resources, line " + std::to_string(number) + ": a field is not a number");
    }
    split_name(k.name, k.base, k.template_args);
    out.push_back(std::move(k));
  }
  return out;
}

std::optional<CompiledKernel> find_kernel(const std::vector<CompiledKernel>& kernels, const std::string& launch_name,
                                          const std::string& dtype, int threads_per_block) {
  for (const CompiledKernel& k : kernels)
    if (k.name == launch_name) return k;  // the demangled instance name, as the emulator reads it
  std::string base, args;
  if (launch_name.find("::") != std::string::npos) {
    split_name(launch_name, base, args);
  } else {
    base = launch_name.substr(0, launch_name.find_first_of("<("));
  }
  std::vector<const CompiledKernel*> same;
  for (const CompiledKernel& k : kernels)
    if (k.base == base) same.push_back(&k);
  if (same.empty()) return std::nullopt;
  if (same.size() == 1) return *same.front();
  const std::string type = dtype == "bf16" ? "__nv_bfloat16" : "float";
  for (const CompiledKernel* k : same)
    if (k->template_args == type) return *k;
  for (const CompiledKernel* k : same)
    if (k->template_args == std::to_string(threads_per_block)) return *k;
  return std::nullopt;
}

}  // namespace astrai::cuda::perf
