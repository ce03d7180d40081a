// A model's tool calls read out of its output text, per family
// (tool_call_family.h). Two readers: parse_tool_calls reads a whole output;
// ToolCallStream reads it piece by piece as it is generated. Joining the
// stream's pieces gives the whole parse exactly (tests/engine/chat_planning/
// feed every recorded output one token at a time, and RapidCheck cuts them
// anywhere).
//
// What a call is, in every family: a JSON object with "name" (a non-empty
// string) and its arguments under "arguments" or "parameters" (an object, a
// string holding one, or absent: {}). Its arguments come out as JSON text
// (compact, keys in the model's order). Text that looks like a call but is
// not one (bad JSON, no name) stays content, as vLLM's parsers leave it.
// When the output made calls and the rest of its text is only whitespace (the
// newlines around Qwen's blocks), the content is "". Whitespace that only
// separates a hermes call from the next call or from the end is no content
// either, so "Text\n<call>\n<call>" has the content "Text\n" (what Anthropic's
// responses show as the text block before their tool_use blocks).
//
// A hermes block ends at the "</tool_call>" after its JSON object, so a
// string argument may hold that text (the grammar allows it); a block whose
// body is not one JSON object ends at its first "</tool_call>".
//
// A hermes block that opens with a call's head, `{"name": "<name>",
// "arguments": {` (streamed_call.h), is a call from that head on: its
// arguments are the object's text minified (whitespace outside strings
// dropped, every other byte as the model wrote it), the rest of the block up
// to its </tool_call> is skipped, and an output cut inside the arguments
// leaves the call with the text written so far (as OpenAI's truncated calls;
// the response's finish reason says it was cut). Every call the tool grammar
// allows is written so. Other blocks (the arguments first, as Hermes 2 Pro
// writes them, or as a string) are read whole as above.
//
// Streams: a call's pieces (ToolCallPiece) come out as the model writes it:
// a hermes call with a head, its name as soon as the head is read and then its
// arguments as they grow; other calls whole once their text has ended (such a
// hermes block at its </tool_call>; llama3 and mistral calls when the output
// ends, since one bad object makes their whole list content). Content comes
// out as soon as it cannot be part of a call; whitespace is held back until
// some non-space content follows it (it may turn out to be the only content
// of an output that made calls).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/chat_planning/streamed_call.h"
#include "engine/chat_planning/tool_call_formats.h"

namespace astrai {

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // JSON text of an object
  bool operator==(const ParsedToolCall&) const = default;
};

struct ParsedToolCalls {
  std::string content;                // the text outside the calls
  std::vector<ParsedToolCall> calls;  // in the order the model wrote them
};

// family None (and Harmony, read by harmony_output.h): the output is all content.
ParsedToolCalls parse_tool_calls(std::string_view output, ToolCallFamily family);

// A streamed call's progress: its first piece names it, the pieces after it
// add to its arguments, and the piece that ends it is its last (the next
// piece with a name starts another call). A call read whole is one piece.
struct ToolCallPiece {
  std::string name;       // set on the call's first piece only
  std::string arguments;  // more of its arguments' text
  bool ends = false;      // the call's arguments are whole (or the output ended)
  bool operator==(const ToolCallPiece&) const = default;
};

// What one piece of output adds: content first, then calls' pieces.
struct StreamedToolCalls {
  std::string content;
  std::vector<ToolCallPiece> calls;
};

class ToolCallStream {
 public:
  // Harmony outputs are read whole by harmony_output.h: here they are content.
  explicit ToolCallStream(ToolCallFamily family)
      : family_(family == ToolCallFamily::Harmony ? ToolCallFamily::None : family) {}

  // The content and the calls' pieces that the next piece of output makes.
  StreamedToolCalls feed(std::string_view piece);
  // The output ended: what was held back, and the calls it completes.
  StreamedToolCalls finish();

 private:
  // How far a hermes block has been read.
  enum class Block {
    Head,       // waiting to know whether it opens with a call's head
    Arguments,  // a call's arguments, streamed through minifier_
    Rest,       // the arguments ended: skipping to </tool_call>
    Whole,      // no head: the block is read whole at its end
  };
  void emit_content(std::string_view text, StreamedToolCalls& out);
  void emit_call(StreamedToolCalls& out, ToolCallPiece piece);
  void hermes_step(StreamedToolCalls& out, bool complete);
  void end_block();

  ToolCallFamily family_;
  std::string output_;           // everything fed so far
  std::string held_;             // hermes: unread text; others: text not yet known to be content
  bool inside_block_ = false;    // hermes: between <tool_call> and </tool_call>
  Block block_ = Block::Head;    // hermes: the open block's state
  ArgumentsMinifier minifier_;   // hermes: the open call's arguments
  bool deferred_ = false;        // llama3/mistral: the rest is decided when the output ends
  bool plain_ = false;           // llama3: the output is content; mistral: content until [TOOL_CALLS]
  std::string held_space_;       // whitespace content not yet shown
  bool content_started_ = false;  // some non-space content was shown
  bool after_call_ = false;       // hermes: a call ended and no content came since
  std::string between_space_;     // hermes: whitespace since that call (dropped if a call or the end follows)
  size_t shown_content_ = 0;     // bytes of content shown (llama3/mistral: a prefix of the whole parse's)
  size_t calls_ = 0;             // calls shown
};

}  // namespace astrai
