#include "server/http/request_head.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace astrai {

namespace {

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

int hex_value(std::string_view digits) {
  int v = 0;
  for (char c : digits) v = v * 16 + (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
  return v;
}

// RFC 9110 section 5.6.2: tchar.
bool is_token_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isalnum(u)) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-': case '.':
    case '^': case '_': case '`': case '|': case '~': return true;
    default: return false;
  }
}

bool forbidden_in_value(int c) { return c == 0 || c == '\r' || c == '\n'; }

// Whether httplib's percent-decoding of a header value (detail::decode_url:
// %XX, and %uXXXX as UTF-8) would produce NUL, CR or LF.
bool decodes_to_forbidden(std::string_view value) {
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '%') continue;
    if (i + 5 < value.size() && value[i + 1] == 'u' && is_hex(value[i + 2]) && is_hex(value[i + 3]) &&
        is_hex(value[i + 4]) && is_hex(value[i + 5])) {
      if (forbidden_in_value(hex_value(value.substr(i + 2, 4)))) return true;
    } else if (i + 2 < value.size() && is_hex(value[i + 1]) && is_hex(value[i + 2])) {
      if (forbidden_in_value(hex_value(value.substr(i + 1, 2)))) return true;
    }
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

HeadVerdict refuse(int status, std::string detail) { return {status, std::move(detail)}; }

// The methods whose body httplib reads, whatever its framing
// (detail::expect_content). For any other method the body would stay in the
// connection and be parsed as the next request. httplib 0.11 reads a
// DELETE's body only when it has a Content-Length (a chunked one was left
// unread: tests/reliability/test_connections.py), and our routes take no
// DELETE, so a DELETE with a body is refused too.
bool httplib_reads_body(std::string_view method) { return method == "POST" || method == "PUT" || method == "PATCH"; }

}  // namespace

std::optional<size_t> request_head_length(std::string_view bytes) {
  size_t line_start = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '\n') continue;
    const size_t line_length = i - line_start;  // without the LF
    if (line_start > 0 && (line_length == 0 || (line_length == 1 && bytes[line_start] == '\r'))) return i + 1;
    line_start = i + 1;
  }
  return std::nullopt;
}

HeadVerdict check_request_head(std::string_view head, size_t max_body_bytes) {
  // Lines, each with its terminator (the last one is the blank line).
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < head.size();) {
    const size_t lf = head.find('\n', start);
    const size_t end = lf == std::string_view::npos ? head.size() : lf + 1;
    lines.push_back(head.substr(start, end - start));
    start = end;
  }
  if (lines.size() < 2) return refuse(400, "the request head is incomplete");
  for (std::string_view line : lines)
    if (line.size() < 2 || line.substr(line.size() - 2) != "\r\n")
      return refuse(400, "a line of the request head does not end with CR LF");
  if (head.find('\0') != std::string_view::npos) return refuse(400, "the request head holds a NUL byte");
  if (lines[0].size() > kMaxRequestLineBytes)
    return refuse(414, "the request line takes " + std::to_string(lines[0].size()) + " bytes; the limit is " +
                           std::to_string(kMaxRequestLineBytes));

  size_t header_bytes = 0;
  std::optional<std::string_view> content_length;
  int transfer_encodings = 0;
  bool chunked = false;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    const std::string_view line = lines[i];
    header_bytes += line.size();
    if (line.size() > kMaxHeaderLineBytes)
      return refuse(431, "a header line takes " + std::to_string(line.size()) + " bytes; the limit is " +
                             std::to_string(kMaxHeaderLineBytes));
    if (header_bytes > kMaxHeaderBytes)
      return refuse(431, "the request's headers take more than " + std::to_string(kMaxHeaderBytes) +
                             " bytes (the limit is " + std::to_string(kMaxHeaderBytes) + ")");
    const std::string_view content = line.substr(0, line.size() - 2);
    if (content.front() == ' ' || content.front() == '\t')
      return refuse(400, "a header line begins with whitespace (obsolete line folding)");
    const size_t colon = content.find(':');
    if (colon == std::string_view::npos) return refuse(400, "a header line has no colon");
    const std::string_view name = content.substr(0, colon);
    for (char c : name)
      if (!is_token_char(c)) return refuse(400, "a header name holds a character that is not allowed (" +
                                                    std::string(c == ' ' || c == '\t' ? "whitespace" : "a separator") +
                                                    ")");
    if (name.empty()) return refuse(400, "a header line has an empty name");
    const std::string_view value = trim(content.substr(colon + 1));
    for (char c : value)
      if (forbidden_in_value(static_cast<unsigned char>(c)))
        return refuse(400, "the value of header '" + std::string(name) + "' holds a NUL, CR or LF byte");
    if (decodes_to_forbidden(value))
      return refuse(400, "the value of header '" + std::string(name) + "' holds a percent-encoded NUL, CR or LF");

    if (equals_ignoring_case(name, "Content-Length")) {
      if (value.empty()) return refuse(400, "Content-Length is empty");
      for (char c : value)
        if (c < '0' || c > '9')
          return refuse(400, "Content-Length must be a decimal number of bytes, got '" + std::string(value) + "'");
      if (content_length && *content_length != value)
        return refuse(400, "the request carries different Content-Length values");
      content_length = value;
    } else if (equals_ignoring_case(name, "Transfer-Encoding")) {
      ++transfer_encodings;
      chunked = equals_ignoring_case(value, "chunked");
    }
  }
  if (content_length && transfer_encodings > 0)
    return refuse(400, "a request may not carry both Content-Length and Transfer-Encoding");
  if (transfer_encodings > 1 || (transfer_encodings == 1 && !chunked))
    return refuse(400, "the only Transfer-Encoding accepted is one 'chunked'");
  const std::string_view method = lines[0].substr(0, lines[0].find(' '));
  const bool has_body = chunked || (content_length && content_length->find_first_not_of('0') != std::string_view::npos);
  if (has_body && !httplib_reads_body(method))
    return refuse(400, "a " + std::string(method) +
                           " request may not carry a body here: only POST, PUT and PATCH bodies are read, and "
                           "an unread body would be taken for the next request");
  if (content_length) {
    // Compared as digit strings: any number of digits is well formed.
    std::string_view digits = *content_length;
    while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
    const std::string limit = std::to_string(max_body_bytes);
    if (digits.size() > limit.size() || (digits.size() == limit.size() && digits > limit))
      return refuse(413, "Request body too large (the limit is " + limit + " bytes)");
  }
  return {};
}

std::string request_line_summary(std::string_view head) {
  const std::string_view line = head.substr(0, std::min(head.find("\r\n"), kMaxRequestLineBytes));
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) return "-";
  const std::string_view method = line.substr(0, space);
  std::string_view target = line.substr(space + 1);
  target = target.substr(0, std::min(target.find(' '), target.find('?')));
  for (char c : line.substr(0, space + 1 + target.size()))
    if (c < 0x20 || c > 0x7e) return "-";
  if (method.empty() || target.empty()) return "-";
  return std::string(method) + " " + std::string(target);
}

}  // namespace astrai
