// grammar_for: the grammar of each kind of ConstraintSpec.
#include "engine/grammar/compile_constraint.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/reasoning_grammar.h"
#include "engine/grammar/regex.h"
#include "engine/grammar/tool_call_grammar.h"

namespace astrai::grammar {

namespace {

Grammar finish_simple(const std::string& name, const Expr& body, const std::string& keyword) {
  try {
    GrammarBuilder b(kMaxGrammarStates);
    const int root = b.add(name, body);
    return b.finish(root);
  } catch (const GrammarTooLarge&) {
    throw ConstraintError(keyword, "", "the " + name + " compiles to more than " + std::to_string(kMaxGrammarStates) +
                                           " states (the bound of this server)");
  } catch (const GrammarEmpty&) {
    throw ConstraintError(keyword, "", "the " + name + " matches no text at all");
  }
}

Grammar answer_grammar(const ConstraintSpec& spec) {
  switch (spec.kind) {
    case ConstraintSpec::Kind::JsonSchema: return json_schema_grammar(spec.text);
    case ConstraintSpec::Kind::JsonObject: return json_object_grammar();
    case ConstraintSpec::Kind::Regex: {
      if (spec.text.size() > kMaxSchemaBytes) throw ConstraintError("", "", "the regex is over the size bound");
      return finish_simple("regex", compile_regex(spec.text).expr, "");
    }
    case ConstraintSpec::Kind::Choice: {
      if (spec.choices.empty()) throw ConstraintError("choice", "", "choice needs at least one string");
      std::vector<Expr> alts;
      size_t total = 0;
      for (const auto& c : spec.choices) {
        total += c.size();
        alts.push_back(literal(c));
      }
      if (total > kMaxSchemaBytes) throw ConstraintError("choice", "", "the choices are over the size bound");
      return finish_simple("choice", alt(std::move(alts)), "choice");
    }
    case ConstraintSpec::Kind::ToolCalls: {
      if (spec.text.size() > kMaxSchemaBytes) throw ConstraintError("tools", "", "the tools are over the size bound");
      return tool_call_grammar(spec.tool_syntax, spec.text, spec.single_call, spec.lazy);
    }
  }
  throw ConstraintError("", "", "unknown constraint kind");
}

}  // namespace

Grammar grammar_for(const ConstraintSpec& spec) {
  Grammar answer = answer_grammar(spec);
  switch (spec.start) {
    case ConstraintSpec::Start::Output: return answer;
    case ConstraintSpec::Start::AfterReasoning: return after_reasoning(std::move(answer), spec.reasoning, false);
    case ConstraintSpec::Start::AfterOptionalReasoning: return after_reasoning(std::move(answer), spec.reasoning, true);
  }
  throw ConstraintError("", "", "unknown constraint start");
}

}  // namespace astrai::grammar
