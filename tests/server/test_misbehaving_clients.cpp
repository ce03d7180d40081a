// Clients that leave, dawdle or send too much, spoken to over raw sockets so
// that the test decides exactly when bytes go out and when the connection
// closes:
//  * a non-streamed request whose client disconnects is cancelled (its task
//    and cache freed) instead of generating to its end for nobody;
//  * a request body trickled slower than the request timeout gets 408, and
//    the server goes on serving others; a request head trickled slower gets
//    408 too (from the ConnectionManager, which reads heads) and ends;
//  * a chunked body over the body limit gets 413 (httplib checks only a
//    Content-Length), headers over 64 KiB get 431, and either way the
//    connection ends after the answer;
//  * a body whose length is ambiguous (two different Content-Lengths, or a
//    Content-Length beside Transfer-Encoding) gets 400: a proxy in front may
//    read another length than httplib, the way requests are smuggled.
// (The process-level versions, with many clients at once, are in
// tests/reliability/.)
// No check here depends on the machine's speed (docs/testing.md): a timeout
// is told from what would happen without it by an order of events (the 408
// comes before a trickled request is all sent; the task is cancelled while
// the executor is held), never by how long it took.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/server/raw_connection.h"
#include "tests/server/server_fixture.h"

namespace astrai::test {
namespace {


std::string request_head(const std::string& path, size_t content_length) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(content_length) + "\r\n\r\n";
}

json long_request(int max_tokens) {
  json body = openai_body("Once upon a time", max_tokens);
  body["ignore_eos"] = true;  // runs to max_tokens whatever the model says
  return body;
}

}  // namespace

TEST_CASE("A non-streamed request whose client disconnects is cancelled", "[disconnect]") {
  TestServerOptions options;
  options.context = 512;
  options.cache = KVCacheKind::Paged;
  TestServer server(options);
  const int max_tokens = 200;
  const std::string body = long_request(max_tokens).dump();

  // The control: a client that stays gets all its tokens.
  const json before = server.wait_until_idle();
  REQUIRE(post(server, "/v1/chat/completions", long_request(max_tokens)).status == 200);
  const json after_control = server.wait_until_idle();
  REQUIRE(after_control["total_tokens"].get<int>() - before["total_tokens"].get<int>() == max_tokens);

  // The same request from a client that leaves once generation has begun.
  // The executor stays held until the handler has noticed (it looks every
  // 250 ms) and cancelled the task, so that however slow the machine, the
  // task cannot run on to its end first.
  const uint64_t cancels_before = server.engine().get_stats().cancel_requests;
  {
    RawConnection client(server.port());
    server.executor().pause();
    client.send(request_head("/v1/chat/completions", body.size()) + body);
    server.executor().wait_until_blocked();  // the request is in a forward step now
    client.close();
    server.wait_for_cancel_requests(cancels_before + 1);
    server.executor().resume();
  }
  const json after = server.wait_until_idle();
  const int generated = after["total_tokens"].get<int>() - after_control["total_tokens"].get<int>();
  INFO("tokens generated for the departed client: " << generated);
  CHECK(generated < max_tokens);
  CHECK(after["active_tasks"] == 0);
  CHECK(after["cache"]["blocks_held"] == 0);
  CHECK(after["cache"]["tasks"] == 0);
}

TEST_CASE("A request body trickled slower than the request timeout gets 408", "[slow]") {
  TestServerOptions options;
  options.request_timeout = std::chrono::seconds(1);
  options.read_timeout = options.keep_alive_timeout = std::chrono::seconds(60);
  TestServer server(options);
  // JSON whitespace after the body: trickled whole, it would take over 30 s.
  const std::string body = openai_body("Hello", 2).dump() + std::string(300, ' ');

  RawConnection client(server.port());
  client.send(request_head("/v1/chat/completions", body.size()));
  std::string reply;
  size_t sent = 0;
  // One byte every 100 ms: each arrives well within the read timeout (60 s),
  // the whole would take 30 s and more. The 408 must come before it is all
  // sent (a server without the request timeout would take it all and answer
  // 200); how long it took is not checked.
  while (sent < body.size() && reply.empty()) {
    client.send(body.substr(sent++, 1));
    reply = client.receive(std::chrono::milliseconds(100));
  }
  // The head and the body may come in separate segments.
  bool closed = false;
  reply += client.receive_until_closed(std::chrono::milliseconds(30000), closed);
  INFO(reply << "\n(" << sent << " of " << body.size() << " bytes sent)");
  CHECK(sent < body.size());
  CHECK(reply.rfind("HTTP/1.1 408 ", 0) == 0);
  CHECK(reply.find("did not arrive within 1 s") != std::string::npos);
  // Others are served as before.
  CHECK(post(server, "/v1/chat/completions", openai_body("Hello", 2)).status == 200);
  CHECK(server.wait_until_idle()["total_tasks"] == 1);
}

TEST_CASE("A request head trickled slower than the request timeout is cut off", "[slow]") {
  TestServerOptions options;
  options.request_timeout = std::chrono::seconds(1);
  options.read_timeout = options.keep_alive_timeout = std::chrono::seconds(60);
  TestServer server(options);
  RawConnection client(server.port());
  client.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  // One header byte every 100 ms, each well within the read timeout (60 s);
  // the 300 bytes would take 30 s and more. The 408 must come while they
  // are still being sent (without the request timeout none would come);
  // how long it took is not checked.
  std::string answer;
  bool send_failed = false;
  const std::string header = "X-Slow: " + std::string(300, 'x');
  size_t sent = 0;
  while (sent < header.size() && answer.empty() && !send_failed) {
    send_failed = !client.try_send(header.substr(sent++, 1));
    answer = client.receive(std::chrono::milliseconds(100));
  }
  CHECK(sent < header.size());
  // Then the connection ends: within 30 s, so not by the keep-alive timeout
  // (60 s), and with nothing more sent (a second 408 would not be an end).
  bool closed = false;
  answer += client.receive_until_closed(std::chrono::milliseconds(30000), closed);
  INFO(answer << "\n(" << sent << " of " << header.size() << " bytes sent)");
  CHECK(answer.rfind("HTTP/1.1 408 ", 0) == 0);
  CHECK(answer.find("HTTP/1.1 ", 1) == std::string::npos);
  CHECK(closed);
  const json stats = get(server, "/stats").body_json();
  CHECK(stats["http"]["heads_timed_out"] == 1);
  CHECK(stats["http"]["heads_refused"] == 0);
}

TEST_CASE("A kept-alive connection may send any amount over several requests", "[slow]") {
  // Each head is bounded on its own (request_head.h); the bytes of earlier
  // requests on the same connection never count against the next.
  TestServerOptions options;
  options.max_body_bytes = 1 << 20;
  options.step_delay = std::chrono::milliseconds(5);  // 120 tokens take >= 0.6 s
  TestServer server(options);
  auto client = server.client();
  client->set_keep_alive(true);
  json body = openai_body("Once upon a time", 120);
  body["ignore_eos"] = true;
  // 0.9 MB of JSON whitespace per request: 2.7 MB in all on one connection.
  const std::string padded = body.dump() + std::string(900 * 1000, ' ');
  for (int i = 0; i < 3; ++i) {
    INFO("request " << i);
    const auto reply = client->Post("/v1/chat/completions", padded, "application/json");
    REQUIRE(reply);
    CHECK(reply->status == 200);
  }
  const json stats = get(server, "/stats").body_json();
  CHECK(stats["http"]["heads_refused"] == 0);
  CHECK(stats["total_tokens"] == 3 * 120);
}

namespace {

// Everything the server sends until it ends the connection (each case here
// ends it after the answer). The 60 s detects a hang; it is no speed claim,
// and no pause between two segments of the answer is taken for the end.
std::string read_until_closed(const RawConnection& client) {
  bool closed = false;
  std::string all = client.receive_until_closed(std::chrono::milliseconds(60000), closed);
  CHECK(closed);
  return all;
}

}  // namespace

TEST_CASE("A chunked body over the body limit gets 413", "[limits]") {
  TestServerOptions options;
  options.max_body_bytes = 4096;
  TestServer server(options);
  RawConnection client(server.port());
  client.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              "Transfer-Encoding: chunked\r\n\r\n");
  const std::string chunk(1000, ' ');  // JSON whitespace: a valid body if it were allowed to end
  char size_line[16];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", chunk.size());
  for (int i = 0; i < 5; ++i) client.send(size_line + chunk + "\r\n");
  const std::string reply = read_until_closed(client);
  INFO(reply);
  CHECK(reply.rfind("HTTP/1.1 413 ", 0) == 0);
  CHECK(reply.find("the limit is 4096 bytes") != std::string::npos);
  CHECK(reply.find("Connection: close") != std::string::npos);
  CHECK(server.wait_until_idle()["total_tasks"] == 0);
}

TEST_CASE("Request headers over 64 KiB get 431", "[limits]") {
  TestServer server;
  RawConnection client(server.port());
  std::string head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 2000; ++i) head += "X-Filler-" + std::to_string(i) + ": " + std::string(40, 'v') + "\r\n";
  client.send(head + "\r\n");
  const std::string reply = read_until_closed(client);
  INFO(reply.substr(0, 300));
  CHECK(reply.rfind("HTTP/1.1 431 ", 0) == 0);
  CHECK(reply.find("the limit is 65536") != std::string::npos);
  // A head just under the limit (1000 lines of about 56 bytes) is served.
  RawConnection fine(server.port());
  head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (int i = 0; i < 1000; ++i) head += "X-Filler-" + std::to_string(i) + ": " + std::string(40, 'v') + "\r\n";
  REQUIRE(head.size() > 55000);
  fine.send(head + "\r\n");
  CHECK(read_until_closed(fine).rfind("HTTP/1.1 200 ", 0) == 0);
}

TEST_CASE("A body whose length is ambiguous gets 400 and ends the connection", "[limits]") {
  TestServer server;
  const std::string body = openai_body("Hello", 2).dump();
  const std::string length = std::to_string(body.size());
  const std::vector<std::string> heads = {
      "Content-Length: " + length + "\r\nContent-Length: " + std::to_string(body.size() + 5) + "\r\n",
      "Content-Length: " + length + "\r\nTransfer-Encoding: chunked\r\n",
  };
  for (const std::string& lengths : heads) {
    INFO(lengths);
    RawConnection client(server.port());
    client.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                lengths + "\r\n" + body);
    const std::string reply = read_until_closed(client);
    CHECK(reply.rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(reply.find("Connection: close") != std::string::npos);
  }
  // The same length twice is not ambiguous.
  RawConnection client(server.port());
  client.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
              "Content-Type: application/json\r\nContent-Length: " + length + "\r\nContent-Length: " + length +
              "\r\n\r\n" + body);
  CHECK(read_until_closed(client).rfind("HTTP/1.1 200 ", 0) == 0);
  CHECK(server.wait_until_idle()["total_tasks"] == 1);
}

}  // namespace astrai::test
