// The two things the forward pass asks of a KV cache: store the key and value
// rows of a position, and read them back for attention. The reference's dense
// cache, the engine's contiguous and paged caches, and the CUDA executor's page
// tables all sit behind this interface, so the forward pass is written once.
//
// A row is kv_dim = n_kv_heads * head_dim floats, heads one after another.
// `seq` names a sequence in whatever way the cache chooses (a slot index, a
// task id); positions of one sequence run 0, 1, 2, ... without gaps.
#pragma once

namespace astrai {

class KVCacheView {
 public:
  virtual ~KVCacheView() = default;

  // Store K (RoPE already applied) and V of position `pos` of `seq` in `layer`.
  virtual void write(int layer, int seq, int pos, const float* key, const float* value) = 0;

  // The rows stored for position `pos` of `seq` in `layer` (pos was written before).
  virtual const float* key(int layer, int seq, int pos) const = 0;
  virtual const float* value(int layer, int seq, int pos) const = 0;
};

}  // namespace astrai
