// The model `astrai serve` serves when given none (cli/default_model.h).
#include <filesystem>

#include <catch2/catch.hpp>

#include "cli/default_model.h"
#include "engine/model_files/load_model.h"
#include "tests/support/shared_data.h"

namespace astrai::test {

TEST_CASE("The default synthetic model is written once to the cache folder and loads", "[served_model]") {
  const auto cache = scratch_dir() / "server-default-model";
  std::filesystem::remove_all(cache);
  const auto path = ensure_default_model(cache);
  REQUIRE(std::filesystem::exists(path));
  CHECK(path.parent_path() == cache);
  const auto written = std::filesystem::last_write_time(path);
  CHECK(ensure_default_model(cache) == path);  // reused, not rewritten
  CHECK(std::filesystem::last_write_time(path) == written);
  const LoadedModel model = load_model(path.string());
  CHECK(model.format == ModelFormat::Gguf);
  CHECK(model.weights.config.max_seq_len == 512);
  CHECK(model.tokenizer.vocab_size() == 512);
  CHECK(default_model_warning(path).find("MEANINGLESS") != std::string::npos);
  CHECK(default_model_warning(path).find("--model") != std::string::npos);
}

}  // namespace astrai::test
