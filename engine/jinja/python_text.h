// Python's str operations on UTF-8 text, as jinja2's filters and the string
// methods templates call (strip, split, upper, title...) perform them: on code
// points, with Python's notion of whitespace (str.isspace) and Unicode case
// mappings (through ICU). Also Python's float repr and string repr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/utf8.h"

namespace astrai::jinja {

// Code points in and out: decode_utf8 and encode_utf8 of engine/text/utf8.h
// (invalid bytes decode as U+FFFD, one each, as Python's "replace" handler does).

// str.isspace() of one code point: the characters Python strips and splits on.
bool py_isspace(char32_t c);

// str.strip/lstrip/rstrip(chars): chars = nullopt strips whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep, maxsplit); sep = nullopt splits on whitespace runs. Throws
// std::invalid_argument on an empty separator (Python's ValueError).
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
// str.replace(old, new, count); count < 0 replaces all.
std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);  // first code point title-cased, the rest lowered
std::string py_str_title(std::string_view s);   // str.title()
std::string jinja_title(std::string_view s);    // jinja2's title filter (words split at -, whitespace, brackets)
int64_t py_len(std::string_view s);             // code points
// s[start:stop:step] on code points, Python's slice rules (negative indices, clamping).
std::string py_slice(std::string_view s, std::optional<int64_t> start, std::optional<int64_t> stop,
                     std::optional<int64_t> step);
// Python's float repr: shortest round trip, "1.0", "1e+16", "1e-05", "inf", "nan".
std::string py_float_repr(double d);
// Python's float(s) for a string already stripped of whitespace: decimal
// digits with an optional point and exponent, or inf/infinity/nan (any case,
// signed); beyond double's range it rounds to +-inf or 0.0 as Python does
// (std::stod would throw). nullopt where float() raises ValueError (hex
// floats and anything else strtod alone would accept are refused).
std::optional<double> py_parse_float(std::string_view s);
// Python's repr of a str: 'abc', "it's", escapes for \n \t \\ and control characters.
std::string py_string_repr(std::string_view s);

// Python's slice indices for a sequence of length n: fills the positions
// selected by [start:stop:step]. Throws std::invalid_argument when step == 0.
std::vector<int64_t> slice_indices(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   std::optional<int64_t> step);

}  // namespace astrai::jinja
