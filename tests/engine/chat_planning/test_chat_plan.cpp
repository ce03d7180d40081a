// Chat planning on its own, without HTTP: the family table's rows agree with
// the parser and the template detection, and plan_chat turns requests into
// the engine requests the protocols rely on (choice numbering, the
// max_tokens left by the context, echoes, refusals with their kinds). The
// server's tests (tests/server/) check the same plans end to end; these
// name the planner's own rules.
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "engine/chat_planning/chat_plan.h"
#include "engine/chat_planning/tool_call_parser.h"
#include "engine/grammar/compile_constraint.h"
#include "engine/grammar/tool_call_grammar.h"
#include "engine/tokenizer/synthetic_tokenizer.h"
#include "reference/synthetic_model.h"

namespace test_chat_plan {

using namespace astrai;
using json = nlohmann::ordered_json;

ChatModel tiny_chat_model(int context) {
  const ModelConfig c{.dim = 16, .hidden_dim = 32, .n_layers = 1, .n_heads = 2, .n_kv_heads = 1, .vocab_size = 300,
                      .max_seq_len = context};
  auto engine = std::make_shared<InferenceEngine>(std::make_shared<const ModelWeights>(make_synthetic_weights(c, 3)),
                                                  std::make_shared<const Tokenizer>(make_synthetic_tokenizer(300)),
                                                  EngineConfig{});
  return make_chat_model(std::move(engine), make_chat_template("chatml"));
}

ChatRequest chat_of(const std::string& text) {
  ChatRequest r;
  r.messages.push_back({ChatRole::User, text});
  return r;
}

ErrorKind refusal_of(ChatRequest request, const ChatModel& model) {
  try {
    plan_chat(std::move(request), model);
  } catch (const ChatError& e) {
    return e.kind();
  }
  FAIL("plan_chat accepted the request");
  return ErrorKind::Internal;
}

TEST_CASE("Each tool-call family's row: a call in its grammar's syntax parses back; its markers name it",
          "[chat_planning][families]") {
  for (const ToolCallFormat& row : tool_call_formats()) {
    INFO(row.name);
    const grammar::ToolCallSyntax& x = row.syntax;
    // Two calls as the grammar writes them (tool_call_grammar.h); one where
    // the family's turn ends at its call (harmony).
    auto call = [&](const std::string& name, const std::string& args) {
      return x.call_open + (x.bare_name ? name : json(name).dump()) + x.before_arguments + args + x.call_close;
    };
    const std::string output =
        row.one_call_per_turn
            ? call("get_weather", R"({"city": "Paris"})")
            : x.list_open + call("get_weather", R"({"city": "Paris"})") + x.separator + call("get_time", "{}") + x.list_close;
    const json tools = json::parse(R"([{"name": "get_weather", "parameters": {"type": "object"}},
                                       {"name": "get_time", "parameters": {"type": "object"}}])");
    CHECK(grammar::grammar_matches(grammar::tool_call_grammar(x, tools.dump(), row.one_call_per_turn), output));
    OutputParsing how;
    how.tools = row.family;
    how.harmony = row.family == ToolCallFamily::Harmony;  // its calls are read with its reasoning
    const ChoiceParts parsed = parse_choice_output(output, how);
    CHECK(parsed.content.empty());
    REQUIRE(parsed.calls.size() == (row.one_call_per_turn ? 1u : 2u));
    CHECK(parsed.calls[0] == ParsedToolCall{"get_weather", R"({"city":"Paris"})"});
    if (!row.one_call_per_turn) CHECK(parsed.calls[1] == ParsedToolCall{"get_time", "{}"});
    // A template holding the row's markers is recognised as the family.
    std::string chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}";
    for (std::string_view marker : row.template_markers) chat_template += std::string(marker);
    CHECK(detect_tool_call_family(chat_template) == row.family);
    CHECK(tool_call_family_named(row.name) == row.family);
    // Ids: the family's own length of letters and digits, else the protocol's prefix.
    const std::string id = new_tool_call_id(row.family, "toolu_");
    if (row.id_length > 0) {
      CHECK(id.size() == size_t(row.id_length));
      CHECK(id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == std::string::npos);
    } else {
      CHECK(id.rfind("toolu_", 0) == 0);
    }
  }
  CHECK(tool_call_format(ToolCallFamily::None) == nullptr);
  CHECK(detect_tool_call_family("{{ messages }}") == ToolCallFamily::None);
}

TEST_CASE("plan_chat: one prompt rendered, max_tokens what the context leaves unless given", "[chat_planning]") {
  const ChatModel model = tiny_chat_model(64);
  const std::vector<int> ids = model.encode(std::vector<ChatMessage>{{ChatRole::User, "hello there"}});
  ChatPlan plan = plan_chat(chat_of("hello there"), model);
  REQUIRE(plan.requests.size() == 1);
  CHECK(*plan.requests[0].prompt_ids == ids);
  CHECK(plan.prompt_tokens == int(ids.size()));
  // A prompt of P tokens ends by the context after 64 - P + 1 tokens (prompt_limit.h).
  CHECK(plan.requests[0].max_tokens == 64 - int(ids.size()) + 1);
  CHECK(plan.choices() == 1);
  CHECK_FALSE(plan.parsing.active());  // chatml: no tool calls, no reasoning
  ChatRequest bounded = chat_of("hello there");
  bounded.max_tokens = 5;
  CHECK(plan_chat(std::move(bounded), model).requests[0].max_tokens == 5);
}

TEST_CASE("plan_chat: raw prompts run n choices each, numbered prompt by prompt, echoes kept",
          "[chat_planning]") {
  const ChatModel model = tiny_chat_model(64);
  ChatRequest r;
  r.prompts = {{"first prompt", std::nullopt}, {"", std::vector<int>{5, 6, 7}}};
  r.n = 3;
  r.echo = true;
  ChatPlan plan = plan_chat(std::move(r), model);
  REQUIRE(plan.requests.size() == 2);
  CHECK(plan.choices() == 6);
  const std::vector<int> first = model.engine->tokenize("first prompt");
  CHECK(*plan.requests[0].prompt_ids == first);
  CHECK(*plan.requests[1].prompt_ids == std::vector<int>{5, 6, 7});
  CHECK(plan.requests[1].n == 3);
  // Each choice's logprobs follow its own prompt's last token.
  CHECK(plan.last_prompt_tokens ==
        std::vector<int>{first.back(), first.back(), first.back(), 7, 7, 7});
  const std::vector<int> ids = {5, 6, 7};
  CHECK(plan.echoes == std::vector<std::string>{"first prompt", model.engine->tokenizer().decode(ids)});
  // The choices' events come numbered in the response: prompt p's choice c is p * n + c.
  std::vector<int> seen;
  route_choice_events(plan, {[&](const TokenEvent& e) { seen.push_back(e.index); }, nullptr});
  plan.requests[1].on_token(TokenEvent{0, 1, "", nullptr, 2});
  plan.requests[0].on_token(TokenEvent{0, 1, "", nullptr, 1});
  CHECK(seen == std::vector<int>{5, 1});
  CHECK(plan.choices() == 6);  // still known once the requests are submitted (moved out)
  plan.requests.clear();
  CHECK(plan.choices() == 6);
}

TEST_CASE("plan_chat refuses with the kind each protocol maps to a status", "[chat_planning][errors]") {
  const ChatModel model = tiny_chat_model(64);
  // Longer than the context.
  CHECK(refusal_of(chat_of(std::string(2000, 'x')), model) == ErrorKind::ContextLength);
  ChatRequest raw;
  raw.prompts = {{"", std::vector<int>(65, 5)}};
  CHECK(refusal_of(raw, model) == ErrorKind::ContextLength);
  // Tools on a built-in template with no markup for them.
  ChatRequest tools = chat_of("hi");
  tools.tools = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  tools.tool_choice.mode = ToolChoice::Mode::Auto;
  CHECK(refusal_of(tools, model) == ErrorKind::InvalidRequest);
  // A schema outside the grammar's subset.
  ChatRequest schema = chat_of("hi");
  schema.constraint = grammar::ConstraintSpec{grammar::ConstraintSpec::Kind::JsonSchema, R"({"not": {}})", {}};
  CHECK(refusal_of(schema, model) == ErrorKind::InvalidRequest);
}

}  // namespace test_chat_plan
