// RequestDecoder alone, driven as the scheduler drives it (on_token for each
// token, then on_finish once): what the caller's callbacks and the
// GenerateResult see, and the rules no engine-level test can single out,
// e.g. a callback that throws while the held-back tail is flushed.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/tokenizer/synthetic_tokenizer.h"
#include "engine/request_decoder.h"
#include "tests/support/utf8_oracle.h"

namespace {

using namespace astrai;

// 400 pieces: the byte pieces, printable ASCII, " a".." z", then " aa", "aa", " ab", "ab"...
std::shared_ptr<const Tokenizer> tokenizer() {
  static const auto t = std::make_shared<const Tokenizer>(make_synthetic_tokenizer(400));
  return t;
}

// The token of one raw byte (the synthetic vocabulary has all 256).
int byte(char c) { return tokenizer()->byte_token(uint8_t(c)); }

int piece(const char* text) {
  const int id = tokenizer()->piece_id(text);
  REQUIRE(id > 0);
  return id;
}

constexpr int kTaskId = 7;
const std::vector<int> kPrompt = {5, 6, 7};

struct Event {
  int task_id;
  int token;
  std::string text;
  bool operator==(const Event&) const = default;
};

// What the caller's callbacks saw.
struct Caller {
  std::vector<Event> events;
  std::vector<TaskOutput> finished;
  int throw_on_call = -1;  // the on_token call (0-based) that throws, if any

  GenerationRequest request(std::vector<std::string> stop = {}) {
    GenerationRequest r;
    r.stop = std::move(stop);
    r.on_token = [this](const TokenEvent& e) {
      events.push_back({e.task_id, e.token, std::string(e.text)});
      if (int(events.size()) - 1 == throw_on_call) throw std::runtime_error("the client went away");
    };
    r.on_finish = [this](const TaskOutput& out) { finished.push_back(out); };
    return r;
  }
};

RequestDecoder make_decoder(Caller& caller, std::vector<std::string> stop = {}, std::vector<int> prompt = kPrompt,
                            std::vector<int> stop_tokens = {2}) {
  return RequestDecoder(kTaskId, tokenizer(), prompt, std::move(stop_tokens), caller.request(std::move(stop)));
}

// The scheduler's output for `tokens` ending with `reason`.
TokenOutput token_output(std::vector<int> tokens, FinishReason reason, std::string error = "") {
  return TokenOutput{kTaskId, std::move(tokens), reason, int(kPrompt.size()), 2, std::move(error)};
}

// Every piece the result got (it has ended, so next_piece never blocks).
std::vector<std::string> result_pieces(GenerateResult& result) {
  REQUIRE(result.done());
  std::vector<std::string> pieces;
  while (auto piece = result.next_piece()) pieces.push_back(*piece);
  return pieces;
}

}  // namespace

TEST_CASE("Each token's showable piece goes to on_token, then to the result; the output carries the scheduler's",
          "[decoder]") {
  Caller caller;
  RequestDecoder decoder = make_decoder(caller);
  // "h", then "é" split over two tokens (its first byte is held back), then "i".
  const std::vector<int> tokens = {byte('h'), byte('\xC3'), byte('\xA9'), byte('i')};
  for (int token : tokens) CHECK_FALSE(decoder.on_token(token));
  decoder.on_finish(token_output(tokens, FinishReason::Length));

  CHECK(caller.events == std::vector<Event>{{kTaskId, tokens[0], "h"},
                                            {kTaskId, tokens[1], ""},
                                            {kTaskId, tokens[2], "\xC3\xA9"},
                                            {kTaskId, tokens[3], "i"}});  // nothing held back: no token -1
  CHECK(result_pieces(*decoder.result()) == std::vector<std::string>{"h", "\xC3\xA9", "i"});
  const TaskOutput out = decoder.result()->wait();
  CHECK(out.task_id == kTaskId);
  CHECK(out.text == "h\xC3\xA9i");
  CHECK(out.tokens == tokens);
  CHECK(out.reason == FinishReason::Length);
  CHECK(out.prompt_tokens == 3);
  CHECK(out.cached_prompt_tokens == 2);
  CHECK(out.error.empty());
  CHECK(out.stop_sequence.empty());
  REQUIRE(caller.finished.size() == 1);
  CHECK(caller.finished[0].text == out.text);
  CHECK(caller.finished[0].tokens == out.tokens);
}

TEST_CASE("What is still held back at the end comes as a last piece with token -1", "[decoder]") {
  Caller caller;
  RequestDecoder decoder = make_decoder(caller, {"ab"});
  // "xa": the "a" may start the stop "ab"; then a first byte of a character that never completes.
  const std::vector<int> tokens = {byte('x'), byte('a'), byte('\xC3')};
  for (int token : tokens) CHECK_FALSE(decoder.on_token(token));
  decoder.on_finish(token_output(tokens, FinishReason::Cancelled));
  REQUIRE(caller.events.size() == 4);
  CHECK(caller.events[1].text == "");
  CHECK(caller.events[3] == Event{kTaskId, -1, "a\xEF\xBF\xBD"});  // the broken character shows as U+FFFD
  CHECK(result_pieces(*decoder.result()) == std::vector<std::string>{"x", "a\xEF\xBF\xBD"});
  CHECK(decoder.result()->wait().text == "xa\xEF\xBF\xBD");
  CHECK(decoder.result()->wait().reason == FinishReason::Cancelled);
}

TEST_CASE("A stop token gives an empty piece and no text; without stop tokens it is text", "[decoder]") {
  const int x = byte('x');
  for (const bool stops : {true, false}) {
    INFO((stops ? "x is a stop token" : "no stop tokens"));
    Caller caller;
    RequestDecoder decoder = make_decoder(caller, {}, kPrompt, stops ? std::vector<int>{2, x} : std::vector<int>{});
    CHECK_FALSE(decoder.on_token(byte('a')));
    CHECK_FALSE(decoder.on_token(x));
    decoder.on_finish(token_output({byte('a'), x}, stops ? FinishReason::Eos : FinishReason::Length));
    REQUIRE(caller.events.size() == 2);
    CHECK(caller.events[1] == Event{kTaskId, x, stops ? "" : "x"});
    CHECK(decoder.result()->wait().text == (stops ? "a" : "ax"));
  }
}

TEST_CASE("The verdict turns true at the token completing a stop string, which never shows", "[decoder]") {
  Caller caller;
  RequestDecoder decoder = make_decoder(caller, {"bc", "zz"});
  CHECK_FALSE(decoder.on_token(byte('a')));
  CHECK_FALSE(decoder.on_token(byte('b')));
  CHECK(decoder.on_token(byte('c')));
  decoder.on_finish(token_output({byte('a'), byte('b'), byte('c')}, FinishReason::StopSequence));
  CHECK(caller.events.size() == 3);  // no tail: the held "b" was the stop's
  const TaskOutput out = decoder.result()->wait();
  CHECK(out.text == "a");
  CHECK(out.stop_sequence == "bc");
  CHECK(out.reason == FinishReason::StopSequence);
}

TEST_CASE("The first token is decoded after the prompt's last one: after BOS it loses its leading space",
          "[decoder]") {
  const int word = piece(" ab");
  for (const int last : {tokenizer()->bos_id(), 5}) {
    Caller caller;
    RequestDecoder decoder = make_decoder(caller, {}, {5, last});
    decoder.on_token(word);
    decoder.on_token(word);
    decoder.on_finish(token_output({word, word}, FinishReason::Length));
    CHECK(decoder.result()->wait().text == (last == tokenizer()->bos_id() ? "ab ab" : " ab ab"));
  }
}

TEST_CASE("An on_token that throws: the scheduler gets the exception, the result the piece, the callback no more",
          "[decoder]") {
  Caller caller;
  caller.throw_on_call = 1;
  RequestDecoder decoder = make_decoder(caller, {"bc"});
  CHECK_FALSE(decoder.on_token(byte('x')));
  // "ab": "a" shows, "b" is held back (it may start "bc"); the callback throws.
  CHECK_THROWS_WITH(decoder.on_token(piece("ab")), "the client went away");
  // The scheduler then ends the request with the error; the held "b" is
  // flushed to the result, not to the callback.
  const std::string error = "the on_token callback threw: the client went away";
  decoder.on_finish(token_output({byte('x'), piece("ab")}, FinishReason::Error, error));
  REQUIRE(caller.events.size() == 2);
  CHECK(caller.events[1] == Event{kTaskId, piece("ab"), "a"});
  CHECK(result_pieces(*decoder.result()) == std::vector<std::string>{"x", "a", "b"});
  const TaskOutput out = decoder.result()->wait();
  CHECK(out.text == "xab");
  CHECK(out.reason == FinishReason::Error);
  CHECK(out.error == error);
  CHECK(caller.finished.size() == 1);
}

TEST_CASE("An on_token that throws on the held-back tail turns the reason into Error, unless it was one already",
          "[decoder]") {
  for (const FinishReason reason : {FinishReason::Length, FinishReason::Cancelled, FinishReason::Error}) {
    INFO("ended as " << to_string(reason));
    Caller caller;
    caller.throw_on_call = 2;  // the tail
    RequestDecoder decoder = make_decoder(caller, {"bc"});
    CHECK_FALSE(decoder.on_token(byte('a')));
    CHECK_FALSE(decoder.on_token(byte('b')));
    const std::string error = reason == FinishReason::Error ? "sampling failed: NaN" : "";
    decoder.on_finish(token_output({byte('a'), byte('b')}, reason, error));
    REQUIRE(caller.events.size() == 3);
    CHECK(caller.events[2] == Event{kTaskId, -1, "b"});
    CHECK(result_pieces(*decoder.result()) == std::vector<std::string>{"a", "b"});  // the tail still arrives
    const TaskOutput out = decoder.result()->wait();
    CHECK(out.text == "ab");
    CHECK(out.reason == FinishReason::Error);
    CHECK(out.error ==
          (reason == FinishReason::Error ? error : std::string("the on_token callback threw: the client went away")));
    REQUIRE(caller.finished.size() == 1);
    CHECK(caller.finished[0].reason == FinishReason::Error);
  }
}

TEST_CASE("An on_finish that throws still lets the result complete; no callback at all is fine", "[decoder]") {
  GenerationRequest request;
  request.on_finish = [](const TaskOutput&) { throw std::runtime_error("ignored"); };
  for (const bool with_on_finish : {true, false}) {
    RequestDecoder decoder(kTaskId, tokenizer(), kPrompt, {}, with_on_finish ? request : GenerationRequest{});
    CHECK_FALSE(decoder.on_token(byte('a')));
    decoder.on_finish(token_output({byte('a')}, FinishReason::Length));
    const auto out = decoder.result()->wait_for(std::chrono::milliseconds(0));
    REQUIRE(out.has_value());
    CHECK(out->text == "a");
    CHECK(out->reason == FinishReason::Length);
  }
}

// The decoder's stop strings as a client sees them, against a model written
// here: one byte token per character over a tiny alphabet, self-overlapping
// stops ("aab" in "aaab", "..." in "....") and stops that prefix one another.
// After each token, the pieces on_token got join to the text so far up to
// the stop that completed first (first_completed_stop), or, before any, less
// its longest suffix that is a proper prefix of a stop; the verdict turns true
// at the token completing the first stop; the result's text is the text up to
// that stop, and the events (the held-back tail included) join to it.
TEST_CASE("Self-overlapping stop strings token by token: the client sees the model's text at every token",
          "[decoder][property]") {
  rc::prop("one character per token", [] {
    const auto chars = *rc::gen::container<std::vector<char>>(rc::gen::element('a', 'a', 'b', '.'));
    const std::string text(chars.begin(), chars.begin() + long(std::min<size_t>(chars.size(), 30)));
    const std::vector<std::string> words = {"aab", "abab", "...", "aa", "aba", "baab", "a.a"};
    std::vector<std::string> stops = {*rc::gen::elementOf(words)};
    // A second stop: a prefix or an extension of the first, or another word,
    // which may complete inside the first ("aa" in "baab") before it does.
    switch (*rc::gen::inRange(0, 4)) {
      case 0: stops.push_back(stops[0].substr(0, stops[0].size() - 1)); break;
      case 1: stops.push_back(stops[0] + "b"); break;
      case 2: stops.push_back(*rc::gen::elementOf(words)); break;
      default: break;
    }
    auto first_stop = [&](const std::string& t) { return test::first_completed_stop(t, stops).first; };
    auto shown_model = [&](const std::string& t) {
      if (const size_t at = first_stop(t); at != std::string::npos) return t.substr(0, at);
      size_t held = 0;
      for (const auto& s : stops)
        for (size_t len = 1; len < s.size() && len <= t.size(); ++len)
          if (t.compare(t.size() - len, len, s, 0, len) == 0) held = std::max(held, len);
      return t.substr(0, t.size() - held);
    };
    Caller caller;
    RequestDecoder decoder = make_decoder(caller, stops);
    std::vector<int> tokens;
    std::string input;
    bool stopped = false;
    for (const char c : text) {
      tokens.push_back(byte(c));
      input += c;
      stopped = decoder.on_token(tokens.back());
      std::string seen;
      for (const Event& e : caller.events) seen += e.text;
      RC_ASSERT(seen == shown_model(input));
      RC_ASSERT(stopped == (first_stop(input) != std::string::npos));
      if (stopped) break;
    }
    decoder.on_finish(token_output(tokens, stopped ? FinishReason::StopSequence : FinishReason::Length));
    const TaskOutput out = decoder.result()->wait();
    const size_t at = first_stop(text);
    RC_ASSERT(out.text == text.substr(0, at));
    std::string seen;
    for (const Event& e : caller.events) seen += e.text;
    RC_ASSERT(seen == out.text);
  });
}
