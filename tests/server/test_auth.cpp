// --api-key: every route but /health needs the key, as a Bearer token or in
// x-api-key; refusals come in the protocol's own error shape.
#include <catch2/catch.hpp>

#include "server/http/api_key.h"
#include "tests/server/server_fixture.h"

namespace astrai::test {

TEST_CASE("constant_time_equal is plain equality", "[auth]") {
  CHECK(constant_time_equal("key", "key"));
  CHECK_FALSE(constant_time_equal("key", "kez"));
  CHECK_FALSE(constant_time_equal("key", "ke"));
  CHECK_FALSE(constant_time_equal("key", "keyy"));
  CHECK_FALSE(constant_time_equal("key", ""));
  CHECK(constant_time_equal("", ""));
  CHECK_FALSE(constant_time_equal(std::string("a\0b", 3), "a"));
  CHECK(api_key_matches("k1", "Bearer k1", ""));
  CHECK(api_key_matches("k1", "bearer k1", ""));
  CHECK(api_key_matches("k1", "", "k1"));
  CHECK_FALSE(api_key_matches("k1", "k1", ""));  // no scheme
  CHECK_FALSE(api_key_matches("k1", "Basic k1", ""));
  CHECK_FALSE(api_key_matches("k1", "Bearer k2", "k3"));
}

TEST_CASE("With --api-key every route but /health needs the key", "[auth]") {
  TestServerOptions options;
  options.api_key = "test-key-123";
  TestServer server(options);

  struct Route {
    std::string method, path;
    json body;
    bool anthropic_errors;
  };
  const std::vector<Route> routes = {
      {"POST", "/v1/chat/completions", openai_body("Hi", 2), false},
      {"POST", "/v1/messages", anthropic_body("Hi", 2), true},
      {"GET", "/v1/models", nullptr, false},
      {"GET", "/stats", nullptr, false},
      {"GET", "/metrics", nullptr, false},
  };
  auto call = [&](const Route& r, const httplib::Headers& headers) {
    return r.method == "GET" ? get(server, r.path, headers) : post(server, r.path, r.body, headers);
  };
  for (const Route& r : routes) {
    INFO(r.method << " " << r.path);
    for (const httplib::Headers& bad : {httplib::Headers{}, httplib::Headers{{"Authorization", "Bearer wrong"}},
                                        httplib::Headers{{"x-api-key", "test-key-12"}},
                                        httplib::Headers{{"Authorization", "test-key-123"}}}) {
      const Reply reply = call(r, bad);
      CHECK(reply.status == 401);
      const json body = reply.body_json();
      if (r.anthropic_errors) {
        CHECK(body["type"] == "error");
        CHECK(body["error"]["type"] == "authentication_error");
        CHECK(body["error"]["message"].is_string());
      } else {
        CHECK(body["error"]["message"].is_string());
        CHECK(body["error"]["type"].is_string());
        CHECK(body["error"]["code"] == "invalid_api_key");
      }
    }
    CHECK(call(r, {{"Authorization", "Bearer test-key-123"}}).status == 200);
    CHECK(call(r, {{"x-api-key", "test-key-123"}}).status == 200);
  }
  // Anthropic's SDK sends anthropic-version everywhere: shared routes answer in its shape then.
  const Reply models = get(server, "/v1/models", {{"anthropic-version", "2023-06-01"}});
  CHECK(models.status == 401);
  CHECK(models.body_json()["error"]["type"] == "authentication_error");
  // /health stays open.
  CHECK(get(server, "/health").status == 200);
  // A route that does not exist tells a client without the key nothing either:
  // 401, and 404 only with the key.
  for (const std::string path : {"/", "/admin", "/v1", "/v1/completions", "/health/x"}) {
    INFO(path);
    CHECK(get(server, path).status == 401);
    CHECK(post(server, path, json{{"a", 1}}).status == 401);
    CHECK(get(server, path, {{"Authorization", "Bearer test-key-123"}}).status == 404);
  }
}

}  // namespace astrai::test
