// What lets a hermes tool call (Qwen 2.5 / 3, Hermes 2 Pro) stream its
// arguments as they are generated rather than whole at its </tool_call>:
//
// - its head, the text `{"name": "<name>", "arguments": {` (JSON whitespace
//   anywhere between the tokens; "parameters" for "arguments"), read while
//   it may still be one (Partial), so that a stream knows the call's name and
//   the start of its arguments object as soon as the model has written them;
// - the arguments object's text read byte by byte (ArgumentsMinifier):
//   whitespace outside strings dropped, every other byte as written, until
//   the object's brackets balance. The arguments of such a call are this
//   minified text in the whole parse as in the stream, so the stream's pieces
//   join to the whole's exactly (and, the object being valid JSON, the text
//   is its compact form up to the spelling of numbers and string escapes,
//   which stays the model's).
//
// Under the tool grammar (tool_call_grammar.h) every call is written this
// way. An output cut inside the arguments (max_tokens, a stop string) leaves
// the call with the arguments written so far, as OpenAI's truncated calls.
#pragma once

#include <string>
#include <string_view>

namespace astrai {

struct CallHead {
  enum class Kind {
    Partial,   // the text so far is a proper prefix of a head: more may complete it
    Mismatch,  // not a head (the call, if any, is read whole at its end)
    Match,     // a head: `name` and where the arguments object starts
  };
  Kind kind = Kind::Partial;
  std::string name;        // Match: the decoded name (non-empty)
  size_t arguments_at = 0;  // Match: the index of the arguments' '{' in the body
};

// Reads the head of a hermes block's body (the text after "<tool_call>").
// `complete`: no more text will come, so a Partial is a Mismatch.
CallHead read_call_head(std::string_view body, bool complete);

// The arguments object's text, minified as it streams. Depth counts '{' and
// '[' against '}' and ']' outside strings (the brackets json_value_end counts
// in tool_call_parser.cpp), so the object ends where the whole parse finds its end.
class ArgumentsMinifier {
 public:
  // Reads `text` (the first byte of the first call being the object's '{')
  // up to the object's end. Returns how many bytes it read: all of `text`
  // unless the object closed inside it; the minified text goes to `out`.
  size_t feed(std::string_view text, std::string& out);
  bool closed() const { return closed_; }

 private:
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
  bool pending_space_ = false;  // whitespace outside strings since the last byte kept
  char last_ = 0;               // the last byte kept
  bool closed_ = false;
};

// The whole object (or the text written of it) minified at once.
std::string minify_arguments(std::string_view text);

}  // namespace astrai
