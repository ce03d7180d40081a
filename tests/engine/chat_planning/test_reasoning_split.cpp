// The reasoning split, whole (split_reasoning) against streamed
// (ReasoningStream): two implementations of one rule, each the other's
// oracle. Streamed parts joined must equal the whole split byte for byte,
// whatever the pieces: the outputs below are fed whole, one byte at a time,
// and (RapidCheck) in random pieces drawn from fragments that make tags,
// near-tags and tags cut anywhere.
#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include "engine/chat_planning/reasoning_split.h"
#include "tests/support/joined_streams.h"
#include "tests/support/random_cuts.h"

namespace astrai {

TEST_CASE("split_reasoning: recorded outputs of Qwen 3 and DeepSeek-R1", "[chat][reasoning]") {
  struct Case {
    std::string output;
    bool starts_in_reasoning;
    std::string reasoning, content;
  };
  const std::vector<Case> cases = {
      // Qwen 3, thinking on: the model opens the block itself.
      {"<think>\nThe user greets me. I should greet back.\n</think>\n\nHello! How can I help you today?", false,
       "\nThe user greets me. I should greet back.\n", "\n\nHello! How can I help you today?"},
      // Qwen 3 with enable_thinking false: the template wrote the empty block, the output is all answer.
      {"Hello! How can I help you today?", false, "", "Hello! How can I help you today?"},
      // DeepSeek-R1: the prompt ends in "<think>\n", the output closes it.
      {"Okay, 2 + 2 is 4.\n</think>\n\nThe answer is 4.", true, "Okay, 2 + 2 is 4.\n", "\n\nThe answer is 4."},
      // Cut by max_tokens inside the reasoning: all of it is reasoning.
      {"<think>\nLet me count: 1, 2, 3", false, "\nLet me count: 1, 2, 3", ""},
      {"Let me count: 1, 2, 3", true, "Let me count: 1, 2, 3", ""},
      // A tag later in an answer is text; a second </think> is content.
      {"Use <think> tags like <think>this</think>.", false, "", "Use <think> tags like <think>this</think>."},
      {"<think>a</think>b</think>c", false, "a", "b</think>c"},
      // Near-tags and an empty block.
      {"<thinking>x</think>", false, "", "<thinking>x</think>"},
      {"<think></think>", false, "", ""},
      {"<think>a</think", false, "a</think", ""},
      {"<thi", false, "", "<thi"},
      {"", false, "", ""},
      {"", true, "", ""},
  };
  for (const Case& c : cases) {
    INFO("output " << c.output << ", starts in reasoning " << c.starts_in_reasoning);
    const ReasoningSplit whole = split_reasoning(c.output, c.starts_in_reasoning);
    CHECK(whole.reasoning == c.reasoning);
    CHECK(whole.content == c.content);
    for (const auto& pieces : {std::vector<std::string>{c.output}, test::one_byte_pieces(c.output)}) {
      const ReasoningSplit s = test::joined_reasoning_stream(pieces, c.starts_in_reasoning);
      CHECK(s.reasoning == c.reasoning);
      CHECK(s.content == c.content);
    }
  }
}

TEST_CASE("ReasoningStream joined equals split_reasoning, any output in any pieces", "[chat][reasoning][property]") {
  rc::prop("fragments that make and break tags, split at random", [] {
    const std::vector<std::string> fragments = {"<think>", "</think>", "<", "</", "<th", "</thi", "think>", ">",
                                                "nk>",     "a",        "\n", " ",  "é",   "<think",  "</think"};
    const auto picks = *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, fragments.size()));
    std::string output;
    for (size_t i : picks) output += fragments[i];
    const bool starts_in_reasoning = *rc::gen::arbitrary<bool>();
    const ReasoningSplit whole = split_reasoning(output, starts_in_reasoning);
    const ReasoningSplit s = test::joined_reasoning_stream(test::random_cuts(output), starts_in_reasoning);
    RC_ASSERT(s.reasoning == whole.reasoning);
    RC_ASSERT(s.content == whole.content);
    // Nothing lost: the parts and the dropped tags make the output again.
    RC_ASSERT(whole.reasoning.size() + whole.content.size() <= output.size());
  });
}

TEST_CASE("prompt_opens_reasoning: a prompt that ends inside <think>", "[chat][reasoning]") {
  CHECK(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
  CHECK_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));  // Qwen 3, enable_thinking false
  CHECK_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
  CHECK(prompt_opens_reasoning("<think>a</think> then <think>"));
}

}  // namespace astrai
