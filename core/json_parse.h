// The one JSON parser every pipescope reader goes through (core/json_reader.h's from_text and
// from_file). Invariant: what it returns nests at most kMaxJsonDepth arrays and objects,
// holds no key twice in one object and only finite numbers; anything else throws InputError
// naming the source and the JSON path where the parser stood, so no later copy, dump or
// comparison of a parsed value (all recursive in nlohmann::json) can exhaust the stack.
//   Json j = parse_json(text, "plan.json");  // "plan.json: layout.t: key given twice ..."
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace pipescope {

// Arrays and objects inside one another, the top level counting 1. The deepest pipescope
// format nests 5 (a schedule's position_ops[][] of op objects in a file object, a Chrome
// trace's args); a Hugging Face config 3.
inline constexpr std::size_t kMaxJsonDepth = 100;

nlohmann::json parse_json(const std::string& text, const std::string& source);

}  // namespace pipescope
