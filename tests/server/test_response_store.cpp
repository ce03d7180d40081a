// The Responses API's stored responses (server/protocols/response_store.h):
// previous_response_id continues a conversation, GET and DELETE
// /v1/responses/{id}, and the store's bound. The oracle for a continued
// conversation is the stateless request a client would send instead: the
// first input, the first response's output items as they came back, then the
// new input. With temperature 0 (greedy) both give the same prompt (equal
// input_tokens) and the same output.
#include <catch2/catch.hpp>

#include "server/protocols/response_store.h"
#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {

constexpr const char* kPath = "/v1/responses";

json body_of(json input, int max_output_tokens = 8) {
  return {{"model", "m"}, {"input", std::move(input)}, {"max_output_tokens", max_output_tokens}, {"temperature", 0}};
}

json user_item(const std::string& text) { return {{"type", "message"}, {"role", "user"}, {"content", text}}; }

// The parts of two responses that a continued conversation and its stateless
// equal must share (ids and times differ).
void check_same_answer(const json& a, const json& b) {
  CHECK(a["usage"]["input_tokens"] == b["usage"]["input_tokens"]);
  CHECK(a["output_text"] == b["output_text"]);
  CHECK(a["status"] == b["status"]);
}

ResponseStore::Stored stored_of(size_t text_bytes) {
  return {json{{"text", std::string(text_bytes, 'x')}}, json::array()};
}

}  // namespace

TEST_CASE("ResponseStore: least recently used out first, bounded in bytes", "[responses][store]") {
  const size_t one = ResponseStore::Stored(stored_of(100)).response.dump().size() + json::array().dump().size() + 2;
  ResponseStore store(3 * one);  // room for three entries of ids "r1".."r9"
  REQUIRE(store.put("r1", stored_of(100)));
  REQUIRE(store.put("r2", stored_of(100)));
  REQUIRE(store.put("r3", stored_of(100)));
  CHECK(store.size() == 3);
  CHECK(store.bytes() == 3 * one);
  REQUIRE(store.get("r1"));  // now the most recently used: r2 goes first
  REQUIRE(store.put("r4", stored_of(100)));
  CHECK_FALSE(store.get("r2"));
  CHECK(store.get("r1"));
  CHECK(store.get("r3"));
  CHECK(store.get("r4"));
  // A bigger entry evicts as many as it needs.
  REQUIRE(store.put("r5", stored_of(100 + 2 * one)));  // the whole bound: every other entry goes
  CHECK(store.size() == 1);
  CHECK(store.bytes() <= store.max_bytes());
  // One larger than the whole bound is not kept, and evicts nothing.
  CHECK_FALSE(store.put("r6", stored_of(4 * one)));
  CHECK(store.get("r5"));
  // The same id again replaces its entry.
  REQUIRE(store.put("r5", stored_of(10)));
  CHECK(store.size() == 1);
  CHECK(store.get("r5")->response["text"] == std::string(10, 'x'));
  CHECK(store.erase("r5"));
  CHECK_FALSE(store.erase("r5"));
  CHECK(store.size() == 0);
  CHECK(store.bytes() == 0);
}

TEST_CASE("Responses: previous_response_id continues the stored conversation", "[responses][store]") {
  TestServer server;
  json first_body = body_of("Once upon a time");
  first_body["instructions"] = "Tell a story.";
  const Reply first = post(server, kPath, first_body);
  REQUIRE(first.status == 200);
  const json r1 = first.body_json();
  CHECK(r1["store"] == true);
  CHECK(r1["previous_response_id"].is_null());

  SECTION("a second turn equals the stateless request with the whole conversation") {
    json next = body_of("And then");
    next["previous_response_id"] = r1["id"];
    const Reply second = post(server, kPath, next);
    INFO(second.body);
    REQUIRE(second.status == 200);
    const json r2 = second.body_json();
    CHECK(r2["previous_response_id"] == r1["id"]);
    // Instructions are not carried over (OpenAI's rule): the stateless equal has none.
    json items = json::array({user_item("Once upon a time")});
    for (const json& item : r1["output"]) items.push_back(item);
    items.push_back(user_item("And then"));
    const Reply stateless = post(server, kPath, body_of(items));
    REQUIRE(stateless.status == 200);
    check_same_answer(r2, stateless.body_json());

    // A third turn continues the second's conversation, streamed this time,
    // and the stream's final response is what GET returns.
    json third = body_of(json::array({user_item("The end?")}));
    third["previous_response_id"] = r2["id"];
    third["stream"] = true;
    const Reply streamed = post(server, kPath, third);
    REQUIRE(streamed.status == 200);
    const std::vector<SseEvent> events = parse_sse(streamed.body);
    REQUIRE(!events.empty());
    const json r3 = json::parse(events.back().data)["response"];
    for (const json& item : r2["output"]) items.push_back(item);
    items.push_back(user_item("The end?"));
    check_same_answer(r3, post(server, kPath, body_of(items)).body_json());
    const Reply got = get(server, std::string(kPath) + "/" + r3["id"].get<std::string>());
    REQUIRE(got.status == 200);
    CHECK(got.body_json() == r3);
  }
  SECTION("GET returns the response; DELETE forgets it, and then it is not found") {
    const std::string path = std::string(kPath) + "/" + r1["id"].get<std::string>();
    const Reply got = get(server, path);
    REQUIRE(got.status == 200);
    CHECK(got.body_json() == r1);
    const Reply deleted = del(server, path);
    REQUIRE(deleted.status == 200);
    CHECK(deleted.body_json() == json({{"id", r1["id"]}, {"object", "response"}, {"deleted", true}}));
    CHECK(get(server, path).status == 404);
    CHECK(del(server, path).status == 404);
    json next = body_of("And then");
    next["previous_response_id"] = r1["id"];
    const Reply refused = post(server, kPath, next);
    CHECK(refused.status == 400);
    CHECK(refused.body_json()["error"]["code"] == "previous_response_not_found");
    CHECK(refused.body_json()["error"]["param"] == "previous_response_id");
  }
  SECTION("an unknown id, a non-string id, store false") {
    json next = body_of("And then");
    next["previous_response_id"] = "resp_unknown";
    Reply refused = post(server, kPath, next);
    CHECK(refused.status == 400);
    CHECK(refused.body_json()["error"]["code"] == "previous_response_not_found");
    CHECK(refused.body_json()["error"]["message"].get<std::string>().find("resp_unknown") != std::string::npos);
    next["previous_response_id"] = 7;
    refused = post(server, kPath, next);
    CHECK(refused.status == 400);
    CHECK(refused.body_json()["error"]["param"] == "previous_response_id");
    // store false: served, said so, and not kept.
    json unkept = body_of("Once upon a time");
    unkept["store"] = false;
    const json r = post(server, kPath, unkept).body_json();
    CHECK(r["store"] == false);
    CHECK(get(server, std::string(kPath) + "/" + r["id"].get<std::string>()).status == 404);
  }
  SECTION("an error in the new input names its own index") {
    json next = body_of(json::array({user_item("ok"), {{"type", "message"}, {"role", "robot"}, {"content", "x"}}}));
    next["previous_response_id"] = r1["id"];
    const Reply refused = post(server, kPath, next);
    CHECK(refused.status == 400);
    CHECK(refused.body_json()["error"]["param"] == "input[1].role");
  }
}

TEST_CASE("Responses: a server that keeps no responses serves each one alone", "[responses][store]") {
  TestServerOptions options;
  options.responses_store_bytes = 0;
  TestServer server(options);
  const json r = post(server, kPath, body_of("Once upon a time")).body_json();
  CHECK(r["store"] == false);
  CHECK(get(server, std::string(kPath) + "/" + r["id"].get<std::string>()).status == 404);
  json next = body_of("And then");
  next["previous_response_id"] = r["id"];
  CHECK(post(server, kPath, next).status == 400);
}

}  // namespace astrai::test
