// Verifying proposed tokens (speculative decoding): which of k proposed
// tokens a request keeps, and the one token the target adds.
//
// The rule. The target's forward pass scores the row's last token and the k
// proposals d_1..d_k at once, giving logit rows R_0..R_k (R_i predicts the
// token after d_i). The request's own sampler then draws from R_0, R_1, ...
// in order, exactly as it would without speculation, each draw taking the
// request's next uniform and seeing the tokens before it (penalties, masks):
// while the draw from R_i equals d_{i+1} the proposal is kept; the first draw
// that differs (or the draw from R_k when all k are kept) is the target's
// token, and the rows after it are discarded unread.
//
// Why this is the standard rule and lossless. Every proposer here is
// deterministic (n-gram lookup, a greedy draft model): its distribution q is
// one-hot on d. Speculative sampling (Leviathan et al. 2023; Chen et al.
// 2023) accepts d with probability min(1, p(d) / q(d)) = p(d) and on
// rejection draws from the normalised residual max(0, p - q), which is p
// with d's mass removed. Drawing t from p with the request's uniform and
// accepting iff t == d does exactly that: P(accept) = p(d), and a rejected
// t is p conditioned on t != d. Because the draws are the sequential
// sampler's own (same rows, same uniforms, in the same order, none drawn for
// a discarded row), the tokens equal speculation off token for token, at
// every temperature and seed, not only in distribution.
#pragma once

#include <cstddef>
#include <functional>
#include <span>

namespace astrai {

// One draw of the request's sampler: its token, and whether the request ends
// with it (a stop token, its last allowed token, the end of the context), in
// which case no later row is drawn, as the sequential loop would stop.
struct Draw {
  int token = -1;
  bool ends = false;
};

// What the request emits: proposals[0 .. accepted) and then `token` (which,
// when the request ended on a kept proposal, is that proposal).
struct Verification {
  int accepted = 0;
  int token = -1;
  bool ended = false;
};

// draw(i) samples row R_i (consuming the request's next uniform); it is
// called for i = 0, 1, ... until a draw differs from proposals[i], ends the
// request, or i reaches proposals.size().
Verification verify_proposals(std::span<const int> proposals, const std::function<Draw(size_t row)>& draw);

}  // namespace astrai
