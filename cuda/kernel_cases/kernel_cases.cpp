// The registry's list, and what every case shares.
#include <sstream>
#include <stdexcept>

#include "cuda/kernel_cases/kernel_case.h"

#include "cuda/kernel_cases/device_arrays.h"

namespace astrai::cuda::cases {

int pick_from(const Pick& pick, std::initializer_list<int> choices) {
  return *(choices.begin() + pick(0, int(choices.size()) - 1));
}

uint32_t pick_seed(const Pick& pick) { return uint32_t(pick(0, 1 << 30)); }

int pick_vocab(const Pick& pick, std::initializer_list<int> edges) {
  return pick(0, 1) ? pick(1, 3000) : pick_from(pick, edges);
}

int KernelShape::operator[](const std::string& name) const {
  const auto it = dims.find(name);
  if (it == dims.end()) throw std::out_of_range("kernel shape has no dimension '" + name + "'");
  return it->second;
}

int KernelShape::get(const std::string& name, int absent) const {
  const auto it = dims.find(name);
  return it == dims.end() ? absent : it->second;
}

std::string KernelShape::describe() const {
  std::ostringstream out;
  out << dtype_name(dtype) << " seed=" << seed;
  for (const auto& [name, value] : dims) out << " " << name << "=" << value;
  return out.str();
}

std::string KernelRun::check(double rtol) { return test::compare(result(), expected(), rtol); }

const std::vector<KernelCase>& kernel_cases() {
  static const std::vector<KernelCase> cases = {
      convert_case(),       embedding_case(),       rmsnorm_case(), swiglu_case(), logit_softcap_case(), add_bias_case(),
      rope_kv_write_case(), paged_attention_case(), gemm_case(), matvec_case(), matvec_fused_case(), matvec_quant_case(), dequantize_case(), embedding_quant_case(),
      sample_case(),
      adjust_logits_case(), row_logprobs_case(), moe_case(),
  };
  return cases;
}

}  // namespace astrai::cuda::cases
