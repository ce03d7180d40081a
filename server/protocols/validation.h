// Request validation with errors shaped as FastAPI/pydantic shapes them, so
// that clients get the same 422 body from every protocol:
//   {"detail": [{"loc": ["body", "messages", 0, "role"], "msg": "...", "type": "..."}]}
// A FieldChecker reads fields of a JSON body, records every problem it finds
// (not just the first), and throw_if_any() raises them together.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat_planning/chat_request.h"
#include "engine/chat/chat_message.h"

namespace astrai {

struct FieldError {
  nlohmann::ordered_json loc;  // path into the request: ["body", "messages", 0, "content"]
  std::string msg;
  std::string type;    // pydantic's error type: missing, string_type, greater_than_equal, ...
};

class ValidationError : public std::runtime_error {
 public:
  explicit ValidationError(std::vector<FieldError> errors);
  const std::vector<FieldError>& errors() const { return errors_; }
  // {"detail": [...]}
  nlohmann::ordered_json body() const;

 private:
  std::vector<FieldError> errors_;
};

// loc with one more step.
nlohmann::ordered_json loc_append(nlohmann::ordered_json loc, const nlohmann::ordered_json& step);

class FieldChecker {
 public:
  void add(nlohmann::ordered_json loc, std::string msg, std::string type);
  bool ok() const { return errors_.empty(); }
  void throw_if_any() const;

  // obj[key] when present and not null; records "missing" when required.
  const nlohmann::ordered_json* field(const nlohmann::ordered_json& obj, const nlohmann::ordered_json& loc, const std::string& key,
                              bool required = false);

  // obj[key] as a string: field() then string() at loc + key; nullopt when
  // it is absent (recorded when required) or not a string (recorded).
  std::optional<std::string> string_field(const nlohmann::ordered_json& obj, const nlohmann::ordered_json& loc,
                                          const std::string& key, bool required = false);

  // A value of the given type, or nullopt (recording a type error) when it
  // has another. Integers accept integral floats (2.0), as pydantic does;
  // numbers accept integers; booleans are never numbers.
  std::optional<std::string> string(const nlohmann::ordered_json& value, const nlohmann::ordered_json& loc);
  std::optional<long long> integer(const nlohmann::ordered_json& value, const nlohmann::ordered_json& loc);
  std::optional<double> number(const nlohmann::ordered_json& value, const nlohmann::ordered_json& loc);
  std::optional<bool> boolean(const nlohmann::ordered_json& value, const nlohmann::ordered_json& loc);
  bool is_array(const nlohmann::ordered_json& value, const nlohmann::ordered_json& loc);
  bool is_object(const nlohmann::ordered_json& value, const nlohmann::ordered_json& loc);

  // Bound checks; record greater_than_equal / greater_than / less_than_equal.
  void at_least(double value, double bound, const nlohmann::ordered_json& loc);
  void above(double value, double bound, const nlohmann::ordered_json& loc);
  void at_most(double value, double bound, const nlohmann::ordered_json& loc);

 private:
  std::vector<FieldError> errors_;
};

// The parameters both chat protocols spell alike, read into the given
// fields when present: max_tokens (>= 1), temperature (>= 0; 0 = greedy),
// top_p (in (0, 1]), top_k (>= 0), seed (integer), stream (boolean), and
// the extension ignore_eos (boolean: generate max_tokens whatever the model
// says, for benchmarks; vLLM spells it alike) and llama.cpp's
// speculative.n_max (integer >= 0: proposed tokens per step at most; 0 turns
// speculative decoding off for the request). temperature and top_p become
// floats without leaving those bounds: a value beyond float's range is read
// as the largest float, a positive one below it as the smallest.
struct CommonParameters {
  std::optional<int> max_tokens;
  std::optional<float> temperature, top_p;
  std::optional<int> top_k;
  std::optional<uint64_t> seed;
  bool stream = false;
  bool ignore_eos = false;
  std::optional<int> max_proposed;  // speculative.n_max
};
CommonParameters read_common_parameters(FieldChecker& check, const nlohmann::ordered_json& body);
// Copies the fields that were given into the request (defaults stay otherwise).
void apply_common_parameters(const CommonParameters& p, ChatRequest& request);

// A required list of objects (messages), each object given to `read` with
// its location; a missing field, a value that is no list, an empty list and
// an item that is no object are recorded as pydantic words them.
void read_object_list(FieldChecker& check, const nlohmann::ordered_json& body, const nlohmann::ordered_json& body_loc,
                      const std::string& key,
                      const std::function<void(const nlohmann::ordered_json& item, const nlohmann::ordered_json& loc)>& read);

// Message text as both protocols allow it: a non-empty string, or a list of
// {"type": "text", "text": "..."} blocks (joined by "\n"). nullopt on error.
std::optional<std::string> read_text_content(FieldChecker& check, const nlohmann::ordered_json& value,
                                             const nlohmann::ordered_json& loc);

// A non-empty string or a list of them (stop sequences). Appends to `out`.
void read_stop_sequences(FieldChecker& check, const nlohmann::ordered_json& value, const nlohmann::ordered_json& loc,
                         bool allow_single_string, std::vector<std::string>& out);

}  // namespace astrai
