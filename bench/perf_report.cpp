// The performance report without a GPU (cuda/perf_model/perf_report.h): the
// reference decode steps (bf16, Q4_K_M, Q8_0) priced from the emulator's
// access stream, then a summary table.
// Usage: perf_report [--resources FILE.tsv] [--shape NAME] [--json FILE] [--max-traced-blocks N]
// bench/perf-report.sh builds it, writes the resources table with nvcc and runs it.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/emulation/race_detector.h"
#include "cuda/perf_model/perf_report.h"

using namespace astrai::cuda::perf;

int main(int argc, char** argv) {
  ReportOptions options;
  options.progress = &std::cerr;
  // The race detector's shadow of every global byte would hold gigabytes at
  // these shapes; the test suite runs every kernel under it already.
  astrai::emu::set_race_detection(false);
  std::string only, json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--resources") {
      std::ifstream in(value());
      if (!in) {
        std::cerr << "cannot read the resources table\n";
        return 2;
      }
      std::stringstream text;
      text << in.rdbuf();
      options.kernels = parse_kernel_resources(text.str());
    } else if (a == "--shape") {
      only = value();
    } else if (a == "--json") {
      json = value();
    } else if (a == "--max-traced-blocks") {
      options.max_traced_blocks = std::stoll(value());
    } else {
      std::cerr << "usage: perf_report [--resources FILE.tsv] [--shape NAME] [--json FILE] [--max-traced-blocks N]\n";
      return 2;
    }
  }
  if (options.kernels.empty())
    std::cout << "(no --resources table: registers taken as 32 and spills unknown; bench/kernel-resources.sh "
                 "writes it with nvcc)\n\n";
  std::vector<StepReport> reports;
  for (const ReferenceShape& s : reference_shapes()) {
    if (!only.empty() && s.name != only) continue;
    reports.push_back(report_decode_step(s, options));
    print_report(std::cout, reports.back());
    std::cout.flush();
  }
  print_summary(std::cout, reports);
  if (!json.empty()) {
    std::ofstream out(json);
    print_json(out, reports);
  }
  return reports.empty() ? 2 : 0;
}
