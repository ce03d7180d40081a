#include "server/protocols/chat_request_parser.h"

#include "server/protocols/request_error.h"
#include "server/protocols/openai_sampling_fields.h"
#include "server/protocols/validation.h"

namespace astrai {

using json = nlohmann::ordered_json;

namespace {

// Where nlohmann's parser gave up, learnt through its SAX interface: the
// exception it throws for a number beyond a double's range ("1e400",
// json::out_of_range 406) carries no position, unlike a json::parse_error.
class StopPosition final : public json::json_sax_t {
 public:
  size_t position = 0;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t at, const std::string&, const json::exception&) override {
    position = at;
    return false;
  }
};

size_t stop_position(std::string_view body) {
  StopPosition sax;
  json::sax_parse(body, &sax);
  return sax.position;
}

// The 422 for a body that is not JSON (or the protocol's own shape of it);
// `position` counts from 1, as nlohmann does.
ParsedChatRequest not_json(const ResponseBuilder& builder, size_t position, const std::string& what) {
  ParsedChatRequest parsed;
  parsed.status = 422;
  parsed.error_body = json_invalid_detail(position > 0 ? position - 1 : 0, what);
  const ValidationError error({{json::array({"body"}), "the body is not valid JSON (" + what + ")", "json_invalid"}});
  if (const auto shaped = builder.format_validation_error(error)) {
    parsed.status = shaped->status;
    parsed.error_body = shaped->body;
  }
  return parsed;
}

}  // namespace

json json_invalid_detail(size_t error_byte, const std::string& what) {
  const json error = {{"loc", json::array({"body", error_byte})},
                      {"msg", "JSON decode error"},
                      {"type", "json_invalid"},
                      {"ctx", {{"error", what}}}};
  return {{"detail", json::array({error})}};
}

ParsedChatRequest parse_chat_request(ResponseBuilder& builder, std::string_view body, int vocab_size) {
  json value;
  try {
    value = json::parse(body);
  } catch (const json::parse_error& e) {
    return not_json(builder, e.byte, e.what());
  } catch (const json::out_of_range& e) {  // a number too large for a double
    return not_json(builder, stop_position(body), e.what());
  }
  ParsedChatRequest parsed;
  try {
    if (!value.is_object())
      throw ValidationError({{json::array({"body"}), "Input should be a valid dictionary", "dict_type"}});
    parsed.request = builder.prepare(value);
    FieldChecker check;  // ids past the vocabulary: 422 naming the field, as every other bad value
    check_token_ids(check, *parsed.request, vocab_size);
    check.throw_if_any();
  } catch (const ValidationError& e) {
    parsed.request.reset();
    if (const auto shaped = builder.format_validation_error(e)) {
      parsed.status = shaped->status;
      parsed.error_body = shaped->body;
    } else {
      parsed.status = 422;
      parsed.error_body = e.body();
    }
  } catch (const InvalidRequestError& e) {
    parsed.status = 400;
    parsed.error_body = builder.format_error(ErrorKind::InvalidRequest, e.what());
  }
  return parsed;
}

}  // namespace astrai
