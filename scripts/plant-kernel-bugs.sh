#!/usr/bin/env bash
# Plants realistic kernel bugs one at a time in the CUDA kernel source, builds
# the emulated build's kernel and executor tests, runs them, and prints which
# test cases failed; a bug that no test catches is reported and makes the
# script exit 1. Every source file is restored afterwards (also on Ctrl-C).
# docs/cuda.md's planted-bug table is this script's output.
#
#   scripts/plant-kernel-bugs.sh [-C build-emu]
#   PLANT_ONLY='attention|page' scripts/plant-kernel-bugs.sh   (only the bugs whose name matches)
#   PLANT_CASES='attention|kernel case' ...                      (only the test cases whose name matches)
#
# The build must be an emulated one (meson setup build-emu -Dcuda=emulated;
# scripts/build-and-test.sh makes it). Takes about a minute per bug on 2 cores.
# The kernel tests run first; the whole-model tests only for a bug they miss.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-emu
if [ "${1:-}" = "-C" ]; then build=$2; shift 2; fi
grep -q "ASTRAI_CUDA_EMULATED" "$build/build.ninja" 2>/dev/null ||
  { echo "plant-kernel-bugs: $build is not an emulated build (meson setup $build -Dcuda=emulated)" >&2; exit 2; }

# name | file | exact text | replacement
bugs=(
  "GQA: query head kv_head + i * n_kv_heads|cuda/kernels/decode_attention.cu|h = kv_head * group + qi;|h = kv_head + qi * a.n_kv_heads;"
  "page table taken as contiguous|cuda/kernels/attention_split.cuh|page_table[pos / a.page_size] * a.page_size + pos % a.page_size|page_table[0] * a.page_size + pos"
  "page offset off by one at a page edge|cuda/kernels/attention_split.cuh|page_table[pos / a.page_size] * a.page_size + pos % a.page_size|page_table[(pos + 1) / a.page_size] * a.page_size + pos % a.page_size"
  "RoPE sign: a cos + b sin|cuda/kernels/rope_kv_write.cu|__fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s))|__fadd_rn(__fmul_rn(a, c), __fmul_rn(b, s))"
  "q/k/v bias not added (Qwen 2)|cuda/kernels/rope_kv_write.cu|return bias ? __fadd_rn(row[j], to_float(bias[j])) : row[j];|return row[j];"
  "k heads normed with q_norm's weights (Qwen 3)|cuda/kernels/rope_kv_write.cu|const T* w = head < n_heads ? q_norm : k_norm;|const T* w = q_norm;"
  "per-head RMSNorm without epsilon (Qwen 3)|cuda/kernels/rope_kv_write.cu|__fadd_rn(__fdiv_rn(sum_sq, float(head_dim)), eps)|__fdiv_rn(sum_sq, float(head_dim))"
  "RoPE blocks skip the v heads (V never written)|cuda/kernels/rope_kv_write.cu|const int last = min(first + kHeadsPerBlock, rotated + n_kv_heads);|const int last = min(first + kHeadsPerBlock, rotated);"
  "softmax scale dropped|cuda/kernels/attention_split.cuh|s = __fmul_rn(dot, scale);|s = dot;"
  "K/V ring without the barrier before a tile is read and its slot refilled|cuda/kernels/attention_split.cuh|    __syncthreads();                // everyone's have|    // (planted: no barrier)        // everyone's have"
  "warp scratch without __syncwarp()|cuda/kernels/attention_split.cuh|  __syncwarp();|  ;"
  "split merge without log-sum-exp weights|cuda/kernels/attention_merge.cu|expf(__fsub_rn(lse[s], m))|1.0f"
  "causal mask without the row's own position|cuda/kernels/decode_attention.cu|const int end = min(begin + len, pos + 1);|const int end = min(begin + len, pos);"
  "RMSNorm without epsilon|cuda/kernels/residual_rmsnorm.cu|sqrtf(total / float(dim) + eps)|sqrtf(total / float(dim))"
  "bf16 rounding toward zero|cuda/kernels/dtype_device.cuh|__float2bfloat16_rn(x)|__float2bfloat16_rz(x)"
  "mat-vec drops the last tail element when in % 16 bytes != 0|cuda/kernels/matvec.cu|    if (k < in) {|    if (k + 1 < in) {"
  "mat-vec reads row r of x at r * out (a wrong row stride)|cuda/kernels/matvec.cu|x + size_t(r) * size_t(in) + size_t(c) * V|x + size_t(r) * size_t(out) + size_t(c) * V"
  "4-wide bf16 load with the halves of a word swapped|cuda/kernels/vector_access.cuh|v[0] = __int_as_float(int(q.x << 16)), v[1] = __int_as_float(int(q.x & 0xffff0000u));|v[1] = __int_as_float(int(q.x << 16)), v[0] = __int_as_float(int(q.x & 0xffff0000u));"
  "mat-vec lane tree starts at width 4 (lanes 8-15 lost)|cuda/kernels/matvec.cu|for (int width = kLanes / 2; width > 0; width /= 2)|for (int width = kLanes / 4; width > 0; width /= 2)"
  "SwiGLU loop bound i <= hidden (one element past the last row)|cuda/kernels/swiglu.cu|for (int i = i0; i < i0 + kVec4 && i < hidden; ++i)|for (int i = i0; i < i0 + kVec4 && i <= hidden; ++i)"
  "greedy ties to the last maximum|cuda/kernels/sample.cu|if (v > best) {  // strict|if (v >= best) {  // strict"
  "-0 and +0 as two logits|cuda/kernels/sample.cu|unsigned(__float_as_int(x == 0.0f ? 0.0f : x))|unsigned(__float_as_int(x))"
  "top-p sort: ties to the higher id|cuda/kernels/sample.cu|(a == b && ia < ib)|(a == b && ia > ib)"
  "top-k selection stops when the prefix holds at least what is needed|cuda/kernels/sample.cu|if (s.digit_ge[digit] - above == remaining) break;|if (s.digit_ge[digit] - above >= remaining) break;"
  "top-p keeps one candidate too many|cuda/kernels/sample.cu|cut = j + 1;|cut = min(j + 2, k);"
  "softmax without the maximum subtracted|cuda/kernels/sample.cu|exp(double(cand_logit[i]) / temperature - max_logit)|exp(double(cand_logit[i]) / temperature)"
  "gather scan without the group offsets|cuda/kernels/sample.cu|int gt_rank = group_gt[t / kGroup] + scan_gt[t]|int gt_rank = scan_gt[t]"
  "repetition penalty multiplies positive logits too|cuda/kernels/adjust_logits.cu|v > 0.0 ? __ddiv_rn(v, r) : __dmul_rn(v, r)|v > 0.0 ? __dmul_rn(v, r) : __dmul_rn(v, r)"
  "adjusted row's copy skips the last logit|cuda/kernels/adjust_logits.cu|for (int j = t; j < vocab; j += kThreads) y[j] = x[j];|for (int j = t; j < vocab - 1; j += kThreads) y[j] = x[j];"
  "logprobs' top tokens: ties to the higher id|cuda/kernels/row_logprobs.cu|(a == b && ia < ib); }|(a == b && ia > ib); }"
  "logprobs written for rows sampled on the host|cuda/kernels/row_logprobs.cu|chosen.status != kSampleOk) return;|chosen.status == kSampleAllMasked) return;"
  "logprobs' sum without thread 0's part|cuda/kernels/row_logprobs.cu|for (int i = 0; i < kThreads; ++i) total += red_s[i];|for (int i = 1; i < kThreads; ++i) total += red_s[i];"
)

backup=$(mktemp -d)
restore() { for f in "$backup"/*; do [ -e "$f" ] && cp "$f" "$(cat "$f.path")"; done 2>/dev/null || true; }
trap restore EXIT

missed=0
printf '| planted bug | where | failing test cases |\n|---|---|---|\n'
for entry in "${bugs[@]}"; do
  IFS='|' read -r name file text replacement <<<"$entry"
  # PLANT_ONLY=regex plants only the bugs whose name matches (e.g. PLANT_ONLY='page|barrier').
  if [ -n "${PLANT_ONLY:-}" ] && ! [[ $name =~ $PLANT_ONLY ]]; then continue; fi
  saved="$backup/$(echo "$file" | tr / _)"
  cp "$file" "$saved"
  echo "$file" >"$saved.path"
  python3 - "$file" "$text" "$replacement" <<'EOF'
import sys
path, old, new = sys.argv[1:4]
s = open(path).read()
if old not in s:
    sys.exit(f"plant-kernel-bugs: '{old}' is not in {path}: update the bug list")
open(path, "w").write(s.replace(old, new))
EOF
  ninja -C "$build" tests/cuda/test_cuda_kernels tests/cuda/test_cuda_executor >/dev/null
  # The kernel tests first; the whole-model tests only when those miss it.
  failed=""
  for t in test_cuda_kernels test_cuda_executor; do
    while read -r c; do
      [ -n "$c" ] || continue
      # PLANT_CASES=regex runs only the test cases whose name matches.
      if [ -n "${PLANT_CASES:-}" ] && ! [[ $c =~ $PLANT_CASES ]]; then continue; fi
      if ! out=$("$build/tests/cuda/$t" "$c" 2>&1); then
        # The registry's property names its failing case as a section ("paged_attention v1").
        sections=$(printf '%s\n' "$out" | grep -E '^  [a-z_0-9]+ v[0-9]+$' | sort -u | sed 's/^  //' | paste -sd, - || true)
        failed+="\"$c\"${sections:+ ($sections)}; "
      fi
    done < <("$build/tests/cuda/$t" --list-test-names-only 2>/dev/null)
    [ -z "$failed" ] || break
  done
  cp "$saved" "$file"
  if [ -z "$failed" ]; then
    missed=$((missed + 1))
    failed="NONE: no test caught it"
  fi
  printf '| %s | `%s` | %s |\n' "$name" "$(basename "$file")" "${failed%; }"
done
ninja -C "$build" tests/cuda/test_cuda_kernels tests/cuda/test_cuda_executor >/dev/null
exit $((missed > 0))
