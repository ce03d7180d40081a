// OpenAI logprobs entries from token ids and their TokenLogprobs.
#include "server/protocols/logprobs_content.h"

#include <cmath>
#include <string>

namespace astrai {

using json = nlohmann::ordered_json;

json LogprobsContent::one(int token, double logprob) const {
  const std::string bytes = tokenizer_.decode_token(previous_, token);
  json byte_list = json::array();
  for (unsigned char b : bytes) byte_list.push_back(int(b));
  // JSON has no -inf; OpenAI reports -9999.0 for a token with no probability.
  return {{"token", bytes}, {"logprob", std::isfinite(logprob) ? logprob : -9999.0}, {"bytes", std::move(byte_list)}};
}

json LogprobsContent::entries(std::span<const std::pair<int, TokenLogprobs>> tokens) {
  json out = json::array();
  for (const auto& [token, lp] : tokens) {
    json entry = one(token, lp.logprob);
    json top = json::array();
    for (const TopLogprob& t : lp.top) top.push_back(one(t.token, t.logprob));
    entry["top_logprobs"] = std::move(top);
    out.push_back(std::move(entry));
    previous_ = token;
  }
  return out;
}

}  // namespace astrai
