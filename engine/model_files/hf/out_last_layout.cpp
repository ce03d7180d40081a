// gpt-oss's expert layout <-> the weight table's (see out_last_layout.h).
#include "engine/model_files/hf/out_last_layout.h"

#include <stdexcept>
#include <string>

#include "engine/model_files/quant/mxfp4.h"

namespace astrai {
namespace {

// t as [experts, out, in] (a bias: in = 1), and where its outputs sit in the
// folder's tensor: every `stride`-th position from `offset`.
struct OutLastView {
  size_t experts = 0, out = 0, in = 1, stride = 1, offset = 0;

  // The folder's index of the table's [e][o][i].
  size_t file_index(size_t e, size_t o, size_t i) const {
    return (e * in + i) * out * stride + o * stride + offset;
  }
  size_t table_index(size_t e, size_t o, size_t i) const { return (e * out + o) * in + i; }
  size_t size() const { return experts * out * in; }
};

OutLastView view_of(const ModelTensor& t) {
  if (t.row->hf_layout == HfLayout::AsTable || t.shape.size() < 2)
    throw std::logic_error(std::string("out_last_layout: ") + t.row->gguf_name + " is not stored output-last");
  OutLastView v{t.shape[0], t.shape[1], t.shape.size() == 3 ? t.shape[2] : 1};
  if (t.row->hf_layout != HfLayout::OutLast) v.stride = 2;
  if (t.row->hf_layout == HfLayout::OutLastOdd) v.offset = 1;
  return v;
}

}  // namespace

std::vector<float> from_out_last(std::span<const float> file, const ModelTensor& t) {
  const OutLastView v = view_of(t);
  if (file.size() != v.size() * v.stride)
    throw std::logic_error("from_out_last: " + std::to_string(file.size()) + " values for " + t.hf_name());
  std::vector<float> out(v.size());
  for (size_t e = 0; e < v.experts; ++e)
    for (size_t o = 0; o < v.out; ++o)
      for (size_t i = 0; i < v.in; ++i) out[v.table_index(e, o, i)] = file[v.file_index(e, o, i)];
  return out;
}

std::vector<float> to_out_last(std::span<const float> values, std::span<const float> odd, const ModelTensor& t) {
  OutLastView v = view_of(t);
  const bool shared = t.row->hf_layout == HfLayout::OutLastEven;
  if (t.row->hf_layout == HfLayout::OutLastOdd || values.size() != v.size() || odd.size() != (shared ? v.size() : 0))
    throw std::logic_error("to_out_last: the wrong values for " + t.hf_name());
  OutLastView odd_view = v;  // the partner's positions: the odd ones
  odd_view.offset = 1;
  std::vector<float> file(v.size() * v.stride);
  for (size_t e = 0; e < v.experts; ++e)
    for (size_t o = 0; o < v.out; ++o)
      for (size_t i = 0; i < v.in; ++i) {
        file[v.file_index(e, o, i)] = values[v.table_index(e, o, i)];
        if (shared) file[odd_view.file_index(e, o, i)] = odd[v.table_index(e, o, i)];
      }
  return file;
}

std::pair<std::vector<size_t>, std::vector<size_t>> mxfp4_shapes(const ModelTensor& t) {
  const OutLastView v = view_of(t);
  if (t.shape.size() != 3 || v.in % 32 != 0)
    throw std::invalid_argument(t.hf_name() + ": MXFP4 holds matrices whose rows are whole blocks of 32");
  const size_t rows = v.out * v.stride;
  return {{v.experts, rows, v.in / 32, 16}, {v.experts, rows, v.in / 32}};
}

std::vector<float> from_out_last_mxfp4(std::span<const std::byte> blocks, std::span<const std::byte> scales,
                                       const ModelTensor& t) {
  const OutLastView v = view_of(t);
  const size_t rows = v.out * v.stride;
  if (v.in % 32 != 0 || blocks.size() != v.experts * rows * v.in / 2 || scales.size() != v.experts * rows * v.in / 32)
    throw std::logic_error("from_out_last_mxfp4: the wrong number of bytes for " + t.hf_name());
  std::vector<float> out(v.size());
  for (size_t e = 0; e < v.experts; ++e)
    for (size_t o = 0; o < v.out; ++o) {
      const size_t row = e * rows + o * v.stride + v.offset;  // this output's row of the decoded [E, out, in]
      quant::decode_mxfp4_row(blocks.subspan(row * v.in / 2, v.in / 2), scales.subspan(row * v.in / 32, v.in / 32),
                              std::span<float>(out).subspan(v.table_index(e, o, 0), v.in));
    }
  return out;
}

}  // namespace astrai
