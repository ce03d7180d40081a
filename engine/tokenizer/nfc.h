// Unicode NFC, the `NFC` normalizer of tokenizer.json (Qwen), through ICU.
#pragma once

#include <string>
#include <string_view>

namespace astrai {

// `text` in Normalization Form C. Text that is not valid UTF-8 comes back
// unchanged (tokenizer.json's normalizers only ever see valid UTF-8).
std::string nfc_normalize(std::string_view text);

}  // namespace astrai
