// Runs the real `pipescope` binary for the CI tests with stdout and stderr kept apart
// (a CI job parses stdout and shows stderr), in a scratch folder of its own under
// $TMPDIR. Every stdout that is one JSON object is kept there as stdout-N.json, so
// that python/tests/test_schemas.py can validate every output of these tests; files a
// test writes as input are named input-*.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/source_paths.h"

namespace pipescope::ci_testing {

namespace fs = std::filesystem;

struct Outcome {
  int code = -1;
  std::string out, err;
};

inline fs::path scratch() {
  fs::path d = fs::temp_directory_path() / ("pipescope_ci_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Whether `text` is exactly one JSON object (whitespace around it allowed).
inline bool is_one_json_object(const std::string& text) {
  try {
    return nlohmann::json::parse(text).is_object();
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

inline Outcome run_pipescope(const std::string& args) {
  static int calls = 0;
  const fs::path out = scratch() / "stdout.txt", err = scratch() / "stderr.txt";
  const std::string cmd = std::string(PIPESCOPE_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  Outcome r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  if (is_one_json_object(r.out)) std::ofstream(scratch() / ("stdout-" + std::to_string(++calls) + ".json")) << r.out;
  return r;
}

inline std::string shipped(const std::string& name) {
  return std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/" + name;
}

}  // namespace pipescope::ci_testing
