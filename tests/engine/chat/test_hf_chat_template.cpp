// HfChatTemplate (engine/chat/hf_chat_template.h): a model's own Jinja chat
// template read from tokenizer_config.json and rendered with the context
// transformers' apply_chat_template gives it. Expected strings written by hand
// from that context (the Jinja engine itself is tested in tests/engine/jinja/).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "engine/chat/hf_chat_template.h"

namespace {

using astrai::jinja::TemplateError;
using json = nlohmann::ordered_json;

}  // namespace

TEST_CASE("HfChatTemplate: tokenizer_config.json and transformers' render context", "[chat]") {
  const json config = {{"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
                       {"eos_token", "</s>"},
                       {"chat_template",
                        {{{"name", "tool_use"}, {"template", "TOOLS"}},
                         {{"name", "default"},
                          {"template",
                           "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
                           "{% if add_generation_prompt %}>{% endif %}{{ eos_token }}{{ tools is none }}{{ extra }}"}}}}};
  const astrai::HfChatTemplate t(astrai::parse_tokenizer_config(config, "tokenizer_config.json"));
  const std::vector<astrai::ChatMessage> messages = {{astrai::ChatRole::System, "S"}, {astrai::ChatRole::User, "U"}};
  CHECK(t.render(messages, true) == "<s>[system:S][user:U]></s>True");
  CHECK(t.render(messages, false, {{"extra", "E"}}) == "<s>[system:S][user:U]</s>TrueE");

  // A config without bos_token leaves it undefined for the template (Qwen's).
  const astrai::HfChatTemplate no_bos(astrai::parse_tokenizer_config(
      {{"bos_token", nullptr}, {"chat_template", "{{ bos_token is defined }}"}}, "c.json"));
  CHECK(no_bos.render({}, false) == "False");

  CHECK_THROWS_WITH(astrai::parse_tokenizer_config({{"bos_token", "x"}}, "c.json"), "c.json: no chat_template");
  CHECK_THROWS_WITH(astrai::parse_tokenizer_config({{"chat_template", {{{"name", "other"}, {"template", "x"}}}}}, "c.json"),
                    "c.json: chat_template list has no \"default\" template");
  astrai::HfTemplateConfig broken;
  broken.chat_template = "{% if %}";
  CHECK_THROWS_AS(astrai::HfChatTemplate(broken), TemplateError);
  CHECK_THROWS_AS(t.render_request({{"messages", "not a list"}}), std::invalid_argument);
}
