// Errors pipescope throws. Libraries throw; only main() turns them into exit codes:
// InputError -> 2 (bad input or impossible request), RunError -> 3 (a run failed),
// GateError -> 4 (a CI gate was violated), anything else -> 1 (internal error). An
// InputError names where the bad value is: "profile.json: layers[3].forward_ms: expected 4 values, got 3".
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pipescope {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  // "<source>: <path>: <what>", with empty parts left out.
  InputError(const std::string& source, const std::string& path, const std::string& what)
      : std::runtime_error(join(source, path, what)) {}

 private:
  static std::string join(const std::string& source, const std::string& path,
                          const std::string& what) {
    std::string out = source;
    if (!path.empty()) out += (out.empty() ? "" : ": ") + path;
    out += (out.empty() ? "" : ": ") + what;
    return out;
  }
};

class RunError : public std::runtime_error {
 public:
  explicit RunError(const std::string& message) : std::runtime_error(message) {}
};

// One or more CI gates (--max-bubble, --require-fit, ...) were violated; thrown after the
// command printed its full result. Each violation names the gate, the limit and the value.
class GateError : public std::runtime_error {
 public:
  explicit GateError(std::vector<std::string> violations)
      : std::runtime_error(violations.empty() ? "a gate was violated" : violations.front()),
        violations_(std::move(violations)) {}
  const std::vector<std::string>& violations() const { return violations_; }

 private:
  std::vector<std::string> violations_;
};

}  // namespace pipescope
