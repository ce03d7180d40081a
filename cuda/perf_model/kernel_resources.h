// Registers, static shared memory and spills of each compiled kernel, as
// bench/kernel-resources.sh writes them (ptxas -v, one tab-separated line per
// kernel instance with its demangled name), and the lookup from a launch as
// the emulator names it ("swiglu_kernel<Elem>", block 256) to its instance.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cuda/perf_model/occupancy.h"

namespace astrai::cuda::perf {

struct CompiledKernel {
  std::string name;       // demangled: "void astrai::cuda::(anonymous namespace)::swiglu_kernel<__nv_bfloat16>(...)"
  std::string base;       // "swiglu_kernel"
  std::string template_args;  // "__nv_bfloat16", "512", "" for none
  std::string file;
  KernelResources resources;
};

// Parses the TSV (header line first); throws std::runtime_error naming the line on a malformed one.
std::vector<CompiledKernel> parse_kernel_resources(const std::string& tsv);

// The instance a launch ran: the same base name (the launch expression up to
// its '<' or '('), then the instance whose template arguments name the
// element type ("bf16": __nv_bfloat16, "f32": float) or, for an integer
// template argument, equal the block's thread count. nullopt when none matches.
std::optional<CompiledKernel> find_kernel(const std::vector<CompiledKernel>& kernels, const std::string& launch_name,
                                          const std::string& dtype, int threads_per_block);

}  // namespace astrai::cuda::perf
