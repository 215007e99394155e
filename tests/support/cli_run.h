// Runs the built `pipescope` (PIPESCOPE_BINARY) with arguments through the shell and
// returns its exit code and stdout + stderr: the CLI tests' one way to call the command.
//   CliResult r = run_cli("simulate --profile p.json -K 2 -M 4");  EXPECT_EQ(r.code, 0);
//   expect_refused("simulate --offload all", "--offload all: ...");  // exit 2, saying that
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "tests/support/source_paths.h"

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

// `pipescope ARGS` exits 2 and says `message`.
inline void expect_refused(const std::string& args, const std::string& message) {
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
}

}  // namespace pipescope::testing
