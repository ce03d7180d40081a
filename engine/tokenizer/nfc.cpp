// nfc_normalize: UTF-8 -> UTF-16 -> ICU's NFC normalizer -> UTF-8.
#include "engine/tokenizer/nfc.h"

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <vector>

namespace astrai {

std::string nfc_normalize(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* nfc = unorm2_getNFCInstance(&status);
  if (U_FAILURE(status)) return std::string(text);
  // Pure ASCII is already NFC.
  bool ascii = true;
  for (const char c : text) ascii = ascii && uint8_t(c) < 0x80;
  if (ascii) return std::string(text);

  std::vector<UChar> utf16(text.size() + 1);
  int32_t utf16_len = 0;
  u_strFromUTF8(utf16.data(), int32_t(utf16.size()), &utf16_len, text.data(), int32_t(text.size()), &status);
  if (U_FAILURE(status)) return std::string(text);  // invalid UTF-8
  if (unorm2_isNormalized(nfc, utf16.data(), utf16_len, &status) && U_SUCCESS(status)) return std::string(text);
  status = U_ZERO_ERROR;
  // NFC of a string is at most 3 times its length in UTF-16 units.
  std::vector<UChar> normalized(size_t(utf16_len) * 3 + 1);
  const int32_t n = unorm2_normalize(nfc, utf16.data(), utf16_len, normalized.data(), int32_t(normalized.size()), &status);
  if (U_FAILURE(status)) return std::string(text);
  std::string out(size_t(n) * 3 + 1, '\0');
  int32_t out_len = 0;
  u_strToUTF8(out.data(), int32_t(out.size()), &out_len, normalized.data(), n, &status);
  if (U_FAILURE(status)) return std::string(text);
  out.resize(size_t(out_len));
  return out;
}

}  // namespace astrai
