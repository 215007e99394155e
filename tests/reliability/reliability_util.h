// Helpers of the reliability tests: a private temporary folder, small profile JSON
// builders, and running the real `pipescope` binary with its exit code and output.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/source_paths.h"

namespace pipescope::testing {

// A folder under the system temp dir, removed with everything in it at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pipescope-rel-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return file(name);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A chain of `layers` identical layers tabulated at batch sizes 1, 2, 4, with the
// same values at every size (so that the largest allowed values can be used as is).
inline nlohmann::json uniform_profile_json(int layers, double forward_ms = 1.0,
                                           double activation_bytes = 1024, double parameter_bytes = 4096) {
  nlohmann::json ls = nlohmann::json::array();
  for (int l = 0; l < layers; ++l) {
    ls.push_back({{"name", "layer." + std::to_string(l)},
                  {"forward_ms", {forward_ms, forward_ms, forward_ms}},
                  {"backward_ms", {2 * forward_ms, 2 * forward_ms, 2 * forward_ms}},
                  {"activation_bytes", {activation_bytes, activation_bytes, activation_bytes}},
                  {"output_bytes", {256, 256, 256}},
                  {"parameter_bytes", parameter_bytes}});
  }
  return {{"format", "pipescope.profile"}, {"version", 1}, {"model", "uniform"},
          {"device", {{"name", "test device"}, {"memory_bytes", 1 << 30}}},
          {"backend", "cpu"}, {"dtype", "fp32"}, {"batch_sizes", {1, 2, 4}}, {"layers", ls}};
}

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out, err;
};

// Runs `pipescope <args>` (a shell word list) in `dir`; stdout and stderr are captured.
// `prefix` goes before the binary (e.g. "ulimit -v 262144;").
inline CommandResult run_pipescope(const TempDir& dir, const std::string& args,
                                   const std::string& prefix = "") {
  std::string command = "cd '" + dir.path().string() + "' && " + prefix + " '" + std::string(PIPESCOPE_BINARY) + "' " + args +
                        " > .stdout 2> .stderr";
  int status = std::system(command.c_str());  // /bin/sh -c; a killed child gives 128 + signal
  CommandResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  r.out = read_text(dir.file(".stdout"));
  r.err = read_text(dir.file(".stderr"));
  std::filesystem::remove(dir.file(".stdout"));
  std::filesystem::remove(dir.file(".stderr"));
  return r;
}

}  // namespace pipescope::testing
