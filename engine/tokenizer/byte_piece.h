// The spelling of SentencePiece's byte-fallback pieces, "<0xXX>": one piece per
// byte value, standing for that raw byte rather than for its own text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace astrai {

// "<0x0A>" -> 0x0A. Exactly six characters, two hex digits (either case, as
// run.c's sscanf("<0x%02hhX>") accepts); anything else -> nullopt.
inline std::optional<uint8_t> parse_byte_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(piece[3]), lo = hex(piece[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return uint8_t(hi * 16 + lo);
}

// 0x0A -> "<0x0A>" (upper-case hex, as SentencePiece writes it).
inline std::string byte_piece_name(uint8_t byte) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string{'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
}

}  // namespace astrai
