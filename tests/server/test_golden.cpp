// End to end against an independent implementation: `astrai serve`'s code
// path (load_model, the chat template a llama2.c model gets, HttpServer)
// serving the real stories260K must return, over HTTP, exactly the greedy
// text llama2.c's run.c produced for the same prompts (golden/ in the shared
// data).
#include <fstream>

#include <catch2/catch.hpp>

#include "server/http_server.h"
#include "tests/server/server_fixture.h"
#include "tests/support/shared_data.h"

namespace astrai::test {

TEST_CASE("Served stories260K answers with llama2.c's greedy text", "[golden]") {
  ASTRAI_REQUIRE_SHARED(model_path, "models/stories260K/stories260K.bin");
  ASTRAI_REQUIRE_SHARED(golden_path, "golden/stories260K-greedy.json");
  auto served = make_served_model(load_model(model_path.string()), EngineConfig{}, "auto");
  CHECK(served->chat_template->name() == "plain");  // a base model: the message is the prompt
  ServerOptions options;
  options.port = 0;
  options.log_requests = false;
  HttpServer server(options);
  server.set_model(served);
  httplib::Client client("127.0.0.1", server.start());
  client.set_read_timeout(60);

  std::ifstream in(golden_path);
  const json golden = json::parse(in);
  int compared = 0;
  for (const json& c : golden["cases"]) {
    const std::string prompt = c["prompt"];
    if (prompt.empty()) continue;  // an empty message is refused (422) by design
    INFO("prompt: " << prompt);
    // run.c's steps count positions, prompt included: it generates steps - prompt + 1 tokens.
    const int max_tokens = c["steps"].get<int>() - int(c["prompt_ids"].size()) + 1;
    const json messages = json::array({{{"role", "user"}, {"content", prompt}}});
    const json body = {{"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}};
    auto openai = client.Post("/v1/chat/completions", body.dump(), "application/json");
    REQUIRE(openai);
    REQUIRE(openai->status == 200);
    const json reply = json::parse(openai->body);
    // Exact: the served engine runs the reference, whose greedy tokens equal
    // run.c's with every step decided by more than rounding (tests/golden asserts it).
    CHECK(reply["choices"][0]["message"]["content"] == c["greedy_text"]);
    CHECK(reply["usage"]["prompt_tokens"] == c["prompt_ids"].size());
    CHECK(reply["usage"]["completion_tokens"] == c["greedy_ids"].size());

    auto anthropic = client.Post("/v1/messages", body.dump(), "application/json");
    REQUIRE(anthropic);
    CHECK(json::parse(anthropic->body)["content"][0]["text"] == c["greedy_text"]);
    ++compared;
  }
  CHECK(compared == 2);
  served->engine->shutdown();
  server.stop();
}

}  // namespace astrai::test
