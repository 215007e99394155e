// Runs the built `pipescope` (PIPESCOPE_BINARY) with arguments through the shell and
// returns its exit code and stdout + stderr: the CLI tests' one way to call the command.
//   CliResult r = run_cli("simulate --profile p.json -K 2 -M 4");  EXPECT_EQ(r.code, 0);
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace pipescope::testing {

struct CliResult {
  int code;
  std::string out;
};

inline CliResult run_cli(const std::string& args) {
  const std::string cmd = std::string(PIPESCOPE_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace pipescope::testing
