// GPT-2's byte-level alphabet, as Hugging Face's ByteLevel pre-tokenizer and
// decoder use it: every byte 0..255 is spelled as one printable code point, so
// that a BPE vocabulary of strings covers arbitrary bytes. Printable Latin-1
// bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68
// bytes map, in order, to U+0100, U+0101, ... (so ' ' is 'Ġ' U+0120, '\n' is 'Ċ').
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace astrai {

// The code point that spells `byte`.
char32_t byte_level_char(uint8_t byte);
// Each byte of `bytes` spelled as its code point, UTF-8 encoded.
std::string byte_level_encode(std::string_view bytes);
// The bytes a byte-level piece stands for; nullopt when `piece` is not valid
// UTF-8 or holds a code point outside the alphabet.
std::optional<std::string> byte_level_decode(std::string_view piece);

}  // namespace astrai
