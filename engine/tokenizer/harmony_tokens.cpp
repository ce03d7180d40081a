#include "engine/tokenizer/harmony_tokens.h"

#include <algorithm>

namespace astrai {

namespace {

// Whether `text` is an added token's piece: Control, or UserDefined once
// retyped (a tokenizer indexes its pieces again after reading padding).
bool has_added(const std::vector<std::string>& pieces, const std::vector<TokenType>& types, std::string_view text) {
  for (size_t id = 0; id < pieces.size(); ++id)
    if ((types[id] == TokenType::Control || types[id] == TokenType::UserDefined) && pieces[id] == text) return true;
  return false;
}

}  // namespace

bool is_harmony_vocabulary(const std::vector<std::string>& pieces, const std::vector<TokenType>& types) {
  return std::all_of(std::begin(kHarmonyTurnEnds), std::end(kHarmonyTurnEnds),
                     [&](std::string_view end) { return has_added(pieces, types, end); }) &&
         has_added(pieces, types, "<|channel|>");
}

bool type_harmony_markers_as_text(const std::vector<std::string>& pieces, std::vector<TokenType>& types) {
  if (!is_harmony_vocabulary(pieces, types)) return false;
  for (size_t id = 0; id < pieces.size(); ++id)
    if (types[id] == TokenType::Control &&
        std::find(std::begin(kHarmonyTextMarkers), std::end(kHarmonyTextMarkers), pieces[id]) !=
            std::end(kHarmonyTextMarkers))
      types[id] = TokenType::UserDefined;
  return true;
}

}  // namespace astrai
