#include "cuda/perf_model/perf_report.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <stdexcept>

#include "cuda/cuda_check.h"
#include "cuda/emulation/memory_trace.h"
#include "cuda/gemm.h"
#include "cuda/perf_model/trace_observer.h"

namespace astrai::cuda::perf {

namespace {

const cases::KernelCase& find_case(const std::string& name) {
  for (const cases::KernelCase& c : cases::kernel_cases())
    if (c.name == name) return c;
  throw std::invalid_argument("performance report: no kernel case '" + name + "'");
}

// Sets the observer for one scope.
struct ObserverScope {
  explicit ObserverScope(emu::MemoryObserver* o) { emu::set_memory_observer(o); }
  ~ObserverScope() { emu::set_memory_observer(nullptr); }
};

// A cuBLASLt GEMM: the emulator runs its stand-in, not a kernel of ours, so
// nothing is traced. Modeled as a tiled GEMM that reads each operand once
// with full sectors, in 64x128 output tiles (256 threads), split along K
// until the tiles cover every SM (cuBLASLt's heuristic may split K for 9-64
// rows: cuda/gemm.h): an assumption a GPU run checks.
KernelLine modeled_gemm(const GpuSpec& gpu, const StepKernel& k) {
  const int rows = k.shape["rows"], in = k.shape["in"], out = k.shape["out"];
  KernelLine line;
  line.name = "cuBLASLt (modeled)";
  const long long tiles = (static_cast<long long>(out) + 127) / 128 * ((static_cast<long long>(rows) + 63) / 64);
  long long split = 1;
  while (tiles * split < gpu.sms && split < 16 && in / (split * 2) >= 256) split *= 2;
  line.figures.kernel = line.name;
  line.figures.blocks = tiles * split;
  line.figures.threads_per_block = 256;
  line.figures.occupancy = occupancy(gpu, {128, 0, 0}, 256, 64 * 1024);
  line.figures.dram_bytes = line.figures.ideal_bytes = k.ideal_bytes;
  line.figures.flops = 2.0 * rows * double(in) * out;
  line.figures.tensor_cores = true;
  line.figures.bytes_per_warp_load = 512;
  line.estimate = estimate(gpu, line.figures);
  return line;
}

KernelLine traced_line(const GpuSpec& gpu, const ReportOptions& o, const TracedLaunch& t, const std::string& dtype) {
  KernelLine line;
  line.name = t.name;
  line.traced = true;
  const int threads = int(t.block.x * t.block.y * t.block.z);
  if (auto k = find_kernel(o.kernels, t.name, dtype, threads)) {
    line.resources = k->resources;
    line.resources_known = true;
  } else {
    line.resources = {32, 0, 0};
  }
  line.figures.kernel = t.name;
  line.figures.blocks = t.blocks;
  line.figures.threads_per_block = threads;
  line.figures.occupancy = occupancy(gpu, line.resources, threads, int(t.dynamic_smem));
  line.figures.dram_bytes = t.unique_bytes;
  line.figures.bytes_per_warp_load = t.totals.bytes_per_warp_load();
  line.sector_efficiency = t.totals.sector_efficiency();
  line.bank_ratio = t.totals.ideal_wavefronts ? double(t.totals.wavefronts) / double(t.totals.ideal_wavefronts) : 1.0;
  line.traced_blocks = t.traced_blocks;
  double worst = 2.0;
  for (const auto& [pc, site] : t.totals.sites) {
    if (site.space != Space::Global || site.sectors == 0) continue;
    const double eff = double(site.requested_bytes) / double(site.sectors * 32);
    if (eff < worst) {
      worst = eff;
      char pct[32];
      std::snprintf(pct, sizeof pct, " (%.0f%%)", 100.0 * eff);
      // Paths from the source root ("/src/astrai/cuda/kernels/x.cu:12" -> "cuda/kernels/x.cu:12").
      std::string where = emu::describe_code_address(reinterpret_cast<const void*>(pc));
      for (size_t at; (at = where.find("/cuda/kernels/")) != std::string::npos;) {
        const size_t start = where.rfind(' ', at) == std::string::npos ? 0 : where.rfind(' ', at) + 1;
        const size_t paren = where.rfind('(', at);
        const size_t from = paren != std::string::npos && paren + 1 > start ? paren + 1 : start;
        where.erase(from, at + 1 - from);
      }
      line.worst_site = where + pct;
    }
  }
  return line;
}

}  // namespace

namespace {

// The published model a reference step has the shape of.
const char* model_of(const ReferenceShape& s) {
  if (s.gemma) return "Gemma 3 12B";
  if (s.gpt_oss) return "gpt-oss-20b";
  return s.experts > 0 ? "Qwen3-30B-A3B" : "Llama-3-8B";
}

}  // namespace

StepReport report_decode_step(const ReferenceShape& shape, const ReportOptions& options, const GpuSpec& gpu) {
  StepReport r;
  r.shape = shape;
  TraceObserver observer(options.max_traced_blocks);
  cudaStream_t stream = nullptr;
  ASTRAI_CUDA_CHECK(cudaStreamCreate(&stream));
  for (const StepKernel& k : decode_step(shape)) {
    StepPart part;
    part.kernel = k;
    const std::string dtype = k.shape.dtype == DType::BFloat16 ? "bf16" : "f32";
    const bool cublas = k.case_name == "gemm" && GemmRunner::route(k.shape["rows"], GemmAlgorithms::PerRowBucket) !=
                                                     GemmRunner::Route::Matvec;
    if (cublas) {
      part.launches.push_back(modeled_gemm(gpu, k));
    } else {
      auto run = find_case(k.case_name).prepare(k.shape);
      ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));
      {
        ObserverScope scope(&observer);
        run->launch(1, stream);
        ASTRAI_CUDA_CHECK(cudaStreamSynchronize(stream));
      }
      const std::vector<TracedLaunch> launches = observer.take();
      double traced_bytes = 0;
      for (const TracedLaunch& t : launches) traced_bytes += t.unique_bytes;
      for (const TracedLaunch& t : launches) {
        KernelLine line = traced_line(gpu, options, t, dtype);
        // The part's ideal bytes shared out by what each launch moved.
        line.figures.ideal_bytes = traced_bytes > 0 ? k.ideal_bytes * t.unique_bytes / traced_bytes : 0.0;
        line.estimate = estimate(gpu, line.figures);
        part.launches.push_back(std::move(line));
      }
    }
    if (options.progress) *options.progress << "  " << shape.name << ": " << k.what << " done\n" << std::flush;
    for (const KernelLine& l : part.launches) part.seconds += l.estimate.seconds;
    part.floor_seconds = k.ideal_bytes / gpu.hbm_bytes_per_s;
    r.seconds += part.seconds * k.per_step;
    r.parts.push_back(std::move(part));
  }
  ASTRAI_CUDA_CHECK(cudaStreamDestroy(stream));
  r.bytes = step_floor_bytes(shape);
  ReferenceShape bf16 = shape;
  bf16.weights = Weights::BF16;
  r.bf16_bytes = step_floor_bytes(bf16).total();
  r.floor_seconds = r.bytes.total() / gpu.hbm_bytes_per_s;
  return r;
}

// "void astrai::cuda::(anonymous namespace)::matvec_kernel<__nv_bfloat16, 1, true>(...)" -> "matvec_kernel<__nv_bfloat16, 1, true>"
static std::string short_name(const std::string& full) {
  if (full.find("::") == std::string::npos) return full;  // "cuBLASLt (modeled)", or a launch expression
  std::string s = full;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {  // cut the parameter list: the first '(' outside <...> after the name
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == '(' && depth == 0 && s.compare(i, 20, "(anonymous namespace") != 0) {
      s.erase(i);
      break;
    }
  }
  if (const size_t ns = s.find("::(anonymous namespace)::"); ns != std::string::npos) s.erase(0, ns + 25);
  if (const size_t colons = s.substr(0, s.find('<')).rfind("::"); colons != std::string::npos) s.erase(0, colons + 2);
  if (const size_t space = s.substr(0, s.find('<')).rfind(' '); space != std::string::npos) s.erase(0, space + 1);
  // A template argument of the quantized mat-vec: "(astrai::cuda::QuantFormat)2" -> "Q4_K".
  const std::string cast = "(astrai::cuda::QuantFormat)";
  for (size_t at; (at = s.find(cast)) != std::string::npos;) {
    size_t end = at + cast.size();
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    const int value = end > at + cast.size() ? std::stoi(s.substr(at + cast.size(), end - at - cast.size())) : -1;
    s.replace(at, end - at, value >= 0 && value < int(std::size(kQuantFormats))
                                ? std::string(quant_format_info(QuantFormat(value)).name)
                                : "QuantFormat?");
  }
  return s;
}

void print_report(std::ostream& out, const StepReport& r, const GpuSpec& gpu) {
  char buf[512];
  out << "## " << r.shape.name << ": " << model_of(r.shape) << " shape, "
      << weights_name(r.shape.weights) << ", batch "
      << r.shape.batch << ", context " << r.shape.context << " (" << gpu.name << " model; an estimate)\n\n";
  out << "| part | x/step | kernel | blocks | occ (blk/SM, by) | regs | spill B | sector eff | B/load | bank x | est us | "
         "floor us | % floor |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const StepPart& p : r.parts) {
    for (const KernelLine& l : p.launches) {
      std::snprintf(buf, sizeof buf, "| %s | %d | %s | %lld | %d, %s | %s | %s | %s | %.0f | %.2f | %.2f | %.2f | %.0f%% |\n",
                    p.kernel.what.c_str(), p.kernel.per_step, short_name(l.name).c_str(), l.figures.blocks,
                    l.figures.occupancy.blocks_per_sm, l.figures.occupancy.limited_by.c_str(),
                    l.resources_known ? std::to_string(l.resources.registers).c_str() : "?",
                    l.resources_known ? std::to_string(l.resources.spill_bytes).c_str() : "?",
                    l.traced ? (std::to_string(int(std::lround(100 * l.sector_efficiency))) + "%").c_str() : "(model)",
                    l.figures.bytes_per_warp_load, l.bank_ratio, l.estimate.seconds * 1e6, l.estimate.floor_seconds * 1e6,
                    l.estimate.percent_of_floor());
      out << buf;
    }
  }
  std::snprintf(buf, sizeof buf,
                "\nStep: estimated %.3f ms against the HBM floor %.3f ms (%.2f GB at %.1f TB/s: weights %.2f GB + KV "
                "%.2f GB, %.3f of bf16's %.2f GB): %.0f%% of the floor.\n",
                r.seconds * 1e3, r.floor_seconds * 1e3, r.bytes.total() / 1e9, gpu.hbm_bytes_per_s / 1e12,
                r.bytes.weights / 1e9, r.bytes.kv / 1e9, r.bytes.total() / r.bf16_bytes, r.bf16_bytes / 1e9,
                r.percent_of_floor());
  out << buf;
  if (r.bytes.kv_without_windows > r.bytes.kv) {  // what the sliding layers' windows spare
    std::snprintf(buf, sizeof buf,
                  "The sliding windows spare %.2f GB of KV reads a step (%.3f ms at %.1f TB/s): every layer reading "
                  "the whole context would read %.2f GB.\n",
                  (r.bytes.kv_without_windows - r.bytes.kv) / 1e9,
                  (r.bytes.kv_without_windows - r.bytes.kv) / gpu.hbm_bytes_per_s * 1e3, gpu.hbm_bytes_per_s / 1e12,
                  r.bytes.kv_without_windows / 1e9);
    out << buf;
  }
  bool any_site = false;
  for (const StepPart& p : r.parts)
    for (const KernelLine& l : p.launches)
      if (l.traced && l.sector_efficiency < 0.9 && !l.worst_site.empty()) {
        if (!any_site) out << "\nBelow 90% sector efficiency, each launch's worst global access:\n";
        any_site = true;
        out << "- " << short_name(l.name) << ": " << l.worst_site << "\n";
      }
  out << "\n";
}

void print_summary(std::ostream& out, const std::vector<StepReport>& reports, const GpuSpec& gpu) {
  char buf[512];
  out << "## Summary (" << gpu.name << " model at " << gpu.hbm_bytes_per_s / 1e12 << " TB/s; estimates)\n\n"
      << "| step | weights | batch | context | bytes/step (weights + KV) | vs bf16 | HBM floor | estimated | of which "
         "matrices | % of floor |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const StepReport& r : reports) {
    double matrices = 0;  // the GEMM and quantized mat-vec parts
    for (const StepPart& p : r.parts)
      if (p.kernel.case_name == "gemm" || p.kernel.case_name == "matvec_quant") matrices += p.seconds * p.kernel.per_step;
    std::snprintf(buf, sizeof buf,
                  "| `%s` | %s | %d | %d | %.3f GB (%.3f + %.3f) | %.3f | %.3f ms | %.3f ms | %.3f ms | %.0f%% |\n",
                  r.shape.name.c_str(), weights_name(r.shape.weights).c_str(), r.shape.batch, r.shape.context,
                  r.bytes.total() / 1e9, r.bytes.weights / 1e9, r.bytes.kv / 1e9, r.bytes.total() / r.bf16_bytes,
                  r.floor_seconds * 1e3, r.seconds * 1e3, matrices * 1e3, r.percent_of_floor());
    out << buf;
  }
  out << "\n";
}

void print_json(std::ostream& out, const std::vector<StepReport>& reports) {
  out << "{\"steps\": [";
  for (size_t i = 0; i < reports.size(); ++i) {
    const StepReport& r = reports[i];
    out << (i ? ", " : "") << "{\"shape\": \"" << r.shape.name << "\", \"weights\": \"" << weights_name(r.shape.weights)
        << "\", \"weights_bytes\": " << r.bytes.weights << ", \"kv_bytes\": " << r.bytes.kv
        << ", \"estimated_s\": " << r.seconds << ", \"floor_s\": " << r.floor_seconds << ", \"parts\": [";
    for (size_t j = 0; j < r.parts.size(); ++j) {
      const StepPart& p = r.parts[j];
      out << (j ? ", " : "") << "{\"what\": \"" << p.kernel.what << "\", \"case\": \"" << p.kernel.case_name
          << "\", \"shape\": \"" << p.kernel.shape.describe() << "\", \"per_step\": " << p.kernel.per_step
          << ", \"estimated_s\": " << p.seconds << ", \"floor_s\": " << p.floor_seconds << "}";
    }
    out << "]}";
  }
  out << "]}\n";
}

}  // namespace astrai::cuda::perf
