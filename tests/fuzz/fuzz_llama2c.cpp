// Fuzz target: a llama2.c checkpoint of any bytes. The loader either rejects
// it with a clean error or gives weights of the header's shape, from a file of
// exactly the size the header implies; never a crash, a hang, or an
// allocation before the size was checked against the file.
#include "engine/model_files/llama2c/llama2c_checkpoint.h"
#include "tests/fuzz/expected_errors.h"
#include "tests/fuzz/fuzz_support.h"

namespace astrai::fuzz {

int fuzz_llama2c(const uint8_t* data, size_t size) {
  const std::string& path = input_file().write(data, size);
  expect_clean_errors([&] {
    const Llama2cHeader header = read_llama2c_header(path);
    bool valid = true;
    try {
      header.config.validate();
    } catch (const std::invalid_argument&) {
      valid = false;
    }
    check(valid, "a header that reads describes a valid config");
    (void)llama2c_file_size(header);  // may only fail with a clean overflow error
  });
  expect_clean_errors([&] {
    const ModelWeights w = load_llama2c_checkpoint(path);
    w.validate_shapes();
    const Llama2cHeader header = read_llama2c_header(path);
    check(llama2c_file_size(header) == size, "a loaded checkpoint has exactly the size its header implies");
    check(w.config.dim == header.config.dim && w.config.vocab_size == header.config.vocab_size &&
              w.config.n_layers == header.config.n_layers,
          "the weights have the header's shape");
  });
  return 0;
}

}  // namespace astrai::fuzz

ASTRAI_FUZZ_ENTRY(fuzz_llama2c)
