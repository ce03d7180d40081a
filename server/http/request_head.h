// The head of an HTTP/1.x request (request line and header lines, up to the
// blank line), checked as bytes before httplib parses it.
//
// httplib 0.11 is lenient where leniency is dangerous or unhelpful: it cuts a
// header value at a NUL byte (it hands values on as C strings), skips header
// lines that end in a bare LF (a proxy in front may honour them: request
// smuggling), reads a Content-Length of "-1" or "abc" as it likes, answers a
// single 200 KB header line with a plain 400, and waits for a declared 50 MB
// body before saying 413. ConnectionManager runs check_request_head on every
// head before httplib sees it; a head refused here gets the status named and
// the connection ends after the answer.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace astrai {

// httplib's limits, kept: a request line longer than this is 414, a header
// line longer than this 431 (httplib would answer 400).
inline constexpr size_t kMaxRequestLineBytes = 8192;
inline constexpr size_t kMaxHeaderLineBytes = 8192;
// All header lines together (request line excluded), CR LF included.
inline constexpr size_t kMaxHeaderBytes = 64 * 1024;
// The most bytes a head may take in all; a connection that has sent this
// much without a blank line gets 431 without more being read.
inline constexpr size_t kMaxHeadBytes = kMaxRequestLineBytes + kMaxHeaderBytes + 2;

// The length of the head at the start of `bytes` (through the CR LF CR LF or
// LF LF that ends it), or nullopt while it is incomplete. A line of its own
// that is empty or only CR ends the head; check_request_head then refuses a
// head whose lines do not all end in CR LF.
std::optional<size_t> request_head_length(std::string_view bytes);

struct HeadVerdict {
  int status = 0;      // 0: acceptable; else 400, 413, 414 or 431
  std::string detail;  // why, for the error body
};

// Checks a complete head (as request_head_length delimits it):
//  * 414 a request line over kMaxRequestLineBytes;
//  * 431 a header line over kMaxHeaderLineBytes, or header lines over
//    kMaxHeaderBytes in all;
//  * 400 a line not ended by CR LF, a NUL byte anywhere, a header line that
//    begins with whitespace (obsolete line folding, RFC 9112 section 5.2) or
//    whose name is not a token (whitespace before the colon, section 5.1),
//    a header value holding NUL, CR or LF (RFC 9110 section 5.5), raw or
//    percent-encoded (httplib percent-decodes header values);
//  * 400 a body length that is not certain (RFC 9112 section 6.3): a
//    Content-Length that is not digits, two different Content-Lengths,
//    Content-Length beside Transfer-Encoding, or a Transfer-Encoding other
//    than one "chunked";
//  * 400 a body (a non-zero Content-Length, or chunked) on a method whose
//    body httplib does not always read (anything but POST, PUT and PATCH):
//    left in the connection it would be parsed as the next request, which is
//    how a request is smuggled past a proxy (RFC 9112 section 6.3 allows
//    refusing it; the connection then closes);
//  * 413 a Content-Length over max_body_bytes (refused before any of the
//    body is read).
HeadVerdict check_request_head(std::string_view head, size_t max_body_bytes);

// "METHOD PATH" from the request line, for the request log (the path without
// its query, as httplib logs it), or "-" when the line is not of that form or
// holds bytes outside printable ASCII.
std::string request_line_summary(std::string_view head);

}  // namespace astrai
