// request_head.h on its own: where a head ends, and what check_request_head
// refuses, byte by byte (the same through a real server, over sockets:
// test_http_framing.cpp).
#include <catch2/catch.hpp>

#include <string>

#include "server/http/request_head.h"

namespace astrai::test {

TEST_CASE("request_head_length: a blank line (CR LF or LF) ends the head", "[request_head]") {
  CHECK(request_head_length("GET / HTTP/1.1\r\nHost: x\r\n") == std::nullopt);
  CHECK(request_head_length("GET / HTTP/1.1\r\nHost: x\r\n\r\nBODY") == size_t(27));
  CHECK(request_head_length("GET / HTTP/1.1\r\n\r\n") == size_t(18));
  // Bare LF endings still end the head, so that check_request_head can
  // refuse it instead of waiting for a CR LF CR LF that never comes.
  CHECK(request_head_length("GET / HTTP/1.1\nHost: x\n\n") == size_t(24));
  CHECK(request_head_length("") == std::nullopt);
}

TEST_CASE("check_request_head: what passes and what each refusal says", "[request_head]") {
  const std::string start = "POST /v1/messages HTTP/1.1\r\nHost: x\r\n";
  auto status = [&](const std::string& headers, size_t limit = 100) {
    return check_request_head(start + headers + "\r\n", limit).status;
  };
  CHECK(status("") == 0);
  CHECK(status("Content-Length: 100\r\n") == 0);    // at the limit
  CHECK(status("Content-Length: 0100\r\n") == 0);   // leading zeros are digits
  CHECK(status("Content-Length: 101\r\n") == 413);
  CHECK(status("Content-Length: 5\r\nContent-Length: 5\r\n") == 0);
  CHECK(status("Content-Length: 5\r\nContent-Length: 6\r\n") == 400);
  CHECK(status("Content-Length: -1\r\n") == 400);
  CHECK(status("Content-Length: +5\r\n") == 400);
  CHECK(status("Content-Length: 5 5\r\n") == 400);
  CHECK(status("Transfer-Encoding: chunked\r\n") == 0);
  CHECK(status("Transfer-Encoding: Chunked\r\n") == 0);
  CHECK(status("Transfer-Encoding: gzip\r\n") == 400);
  CHECK(status("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n") == 400);
  CHECK(status("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n") == 400);
  CHECK(status(std::string("X-Key: a\0b\r\n", 12)) == 400);
  CHECK(status("X-Key: a\rb\r\n") == 400);
  CHECK(status("X-Key: a%00b\r\n") == 400);
  CHECK(status("X-Key: a%0Ab\r\n") == 400);
  CHECK(status("X-Key: a%0db\r\n") == 400);
  CHECK(status("X-Key: a%u000Ab\r\n") == 400);
  CHECK(status("X-Key: 100%25 sure, %41\r\n") == 0);  // other escapes are left to httplib
  CHECK(status("X-Key : a\r\n") == 400);
  CHECK(status(" X-Key: a\r\n") == 400);
  CHECK(status("X-Key a\r\n") == 400);
  CHECK(status(": a\r\n") == 400);
  CHECK(status("X-Key: a\n") == 400);  // bare LF
  CHECK(status("X-Big: " + std::string(kMaxHeaderLineBytes, 'v') + "\r\n") == 431);
  std::string many;
  while (many.size() <= kMaxHeaderBytes) many += "X-Filler: " + std::string(1000, 'v') + "\r\n";
  CHECK(status(many) == 431);
  CHECK(check_request_head("GET /" + std::string(kMaxRequestLineBytes, 'a') + " HTTP/1.1\r\n\r\n", 100).status == 414);
  CHECK(check_request_head(std::string("GET /\0 HTTP/1.1\r\n\r\n", 19), 100).status == 400);
  const HeadVerdict big = check_request_head(start + "Content-Length: 99999999999999999999999\r\n\r\n", 4194304);
  CHECK(big.status == 413);
  CHECK(big.detail.find("4194304") != std::string::npos);
}

TEST_CASE("check_request_head: a body on a method whose body httplib does not read is refused", "[request_head]") {
  // httplib 0.11 reads a body only for POST, PUT and PATCH (and a DELETE's
  // only when it has a Content-Length). Any other method's body would stay in the connection and be parsed as
  // the next pipelined request: a proxy that forwarded "GET /health" with
  // its body as one request would have a second request slipped past it
  // (RFC 9112 section 6.3: read the body, or refuse and close).
  auto status = [](const std::string& method, const std::string& headers) {
    return check_request_head(method + " /health HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n", 4096).status;
  };
  for (const char* method : {"GET", "HEAD", "OPTIONS", "DELETE", "TRACE", "CONNECT", "PROPFIND"}) {
    CAPTURE(method);
    CHECK(status(method, "") == 0);
    CHECK(status(method, "Content-Length: 0\r\n") == 0);    // no body: nothing left unread
    CHECK(status(method, "Content-Length: 000\r\n") == 0);
    CHECK(status(method, "Content-Length: 35\r\n") == 400);
    CHECK(status(method, "Content-Length: 1\r\n") == 400);
    CHECK(status(method, "Transfer-Encoding: chunked\r\n") == 400);  // even an empty chunked body
  }
  for (const char* method : {"POST", "PUT", "PATCH"}) {
    CAPTURE(method);
    CHECK(status(method, "Content-Length: 35\r\n") == 0);
    CHECK(status(method, "Transfer-Encoding: chunked\r\n") == 0);
  }
  const HeadVerdict get = check_request_head("GET /health HTTP/1.1\r\nContent-Length: 35\r\n\r\n", 4096);
  CHECK(get.detail.find("GET") != std::string::npos);
  CHECK(get.detail.find("body") != std::string::npos);
}

TEST_CASE("request_line_summary: method and path for the log, never the query", "[request_head]") {
  CHECK(request_line_summary("GET /health?key=secret HTTP/1.1\r\n\r\n") == "GET /health");
  CHECK(request_line_summary("POST /v1/messages HTTP/1.1\r\n\r\n") == "POST /v1/messages");
  CHECK(request_line_summary("GET /a\x01 HTTP/1.1\r\n") == "-");
  CHECK(request_line_summary("garbage\r\n\r\n") == "-");
}

}  // namespace astrai::test
