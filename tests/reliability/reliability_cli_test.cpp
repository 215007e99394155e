// The exit-code contract of `pipescope`, checked on the real binary (docs/reliability.md):
// 0 ok, 1 internal error, 2 bad input or impossible request (one message naming the
// file, the field and what was expected), 3 run failed. And the output-file rule: a
// command that fails writes none of its output files; a killed one never leaves a
// truncated file.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/reliability/reliability_util.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

using testing::run_pipescope;
using testing::TempDir;

const std::string kToy = std::string("'") + PIPESCOPE_SOURCE_DIR + "/profiles/toy-uniform.json'";

// Expects exit 2 and a single "pipescope: error: ..." line containing `needle`.
void expect_bad_input(const TempDir& dir, const std::string& args, const std::string& needle) {
  SCOPED_TRACE("pipescope " + args);
  testing::CommandResult r = run_pipescope(dir, args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(ReliabilityCli, ExitZeroOnSuccess) {
  TempDir dir;
  testing::CommandResult r = run_pipescope(dir, "simulate --profile " + kToy + " -K 4 -M 8 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["microbatches"], 8);
}

TEST(ReliabilityCli, AbsurdCountsExitTwoNamingTheFlag) {
  TempDir dir;
  expect_bad_input(dir, "simulate --profile " + kToy + " -K 1000000 -M 4", "--stages: expected 1 to 4096");
  // K = 2, M = 10^9: 4e9 ops against the 5e7 limit, refused before allocating them.
  expect_bad_input(dir, "simulate --profile " + kToy + " -K 2 -M 1000000000", "the limit is 50000000");
  expect_bad_input(dir, "simulate --profile " + kToy + " -K 2 -M 2000000000000", "--microbatches");
  expect_bad_input(dir, "schedule -K 1000000 -M 1000000000", "K x v x M <= 100000");
  expect_bad_input(dir, "schedule -K 316 -M 316 --schedule interleaved --chunks 64", "K x v x M <= 100000");
  expect_bad_input(dir, "simulate --profile " + kToy + " -K 2 -M 4 --microbatch-size -4", "--microbatch-size");
  expect_bad_input(dir, "simulate --profile " + kToy + " -K 2 -M 2000000 --trace t.json", "--trace");
  expect_bad_input(dir, "profile synth --kind uniform --layers 10000000", "--layers: expected 1 to 1000000");
  expect_bad_input(dir, "profile synth --hidden 2000000000 --heads 1 --layers 1", "the default FFN width (8000000000) exceeds 2^31 - 1");
  expect_bad_input(dir, "profile synth --kind uniform --batch-sizes 4,2", "--batch-sizes");
  expect_bad_input(dir, "simulate --profile " + kToy + " -K 2 -M 4 --bogus", "--bogus");
}

TEST(ReliabilityCli, BadFilesExitTwoNamingFileAndField) {
  TempDir dir;
  nlohmann::json p = testing::uniform_profile_json(4);
  std::string text = p.dump();
  // Infinity where a time goes: JSON has no literal for it, 1e400 is the closest.
  std::string inf = text;
  inf.replace(inf.find("\"forward_ms\":[1.0"), 17, "\"forward_ms\":[1e400");
  dir.write("inf.json", inf);
  expect_bad_input(dir, "simulate --profile inf.json -K 2 -M 2", "inf.json: layers[0].forward_ms[0]: invalid JSON: number overflow");
  std::string nan = text;
  nan.replace(nan.find("\"forward_ms\":[1.0"), 17, "\"forward_ms\":[NaN");
  dir.write("nan.json", nan);
  expect_bad_input(dir, "simulate --profile nan.json -K 2 -M 2",
                   "nan.json: layers[0].forward_ms[0]: invalid JSON: parse error at line 1, column 237: syntax error "
                   "while parsing value - invalid literal; last read: '\"forward_ms\":[N' (NaN and Infinity are not "
                   "JSON numbers)");
  p["layers"][1]["output_bytes"][0] = -256;
  dir.write("neg.json", p.dump());
  expect_bad_input(dir, "simulate --profile neg.json -K 2 -M 2", "neg.json: layers[1].output_bytes[0]: expected a number >= 0");
  // Byte counts that pass the reader but overflow int64 once multiplied by M.
  dir.write("big.json", testing::uniform_profile_json(16, 1.0, 1125899906842624.0).dump());
  expect_bad_input(dir, "simulate --profile big.json -K 2 -M 1000", "plan: stages[0]: device 0 would hold");
  expect_bad_input(dir, "simulate --profile missing.json -K 2 -M 2", "missing.json: cannot open file");
  expect_bad_input(dir, "simulate --profile . -K 2 -M 2", "is a folder");
}

#if defined(__SANITIZE_ADDRESS__)
#define PIPESCOPE_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PIPESCOPE_UNDER_ASAN 1
#endif
#endif

TEST(ReliabilityCli, OutOfMemoryIsAnInternalErrorWithExitOne) {
#ifdef PIPESCOPE_UNDER_ASAN
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space; ulimit -v cannot be used";
#else
  // The binary's own address space (large when it links the CUDA libraries) plus
  // 256 MiB; the schedule alone (4.8e7 ops) needs 576 MiB more, so the allocation
  // fails with std::bad_alloc, which main() reports as an internal error.
  // OpenBLAS starts its thread pool when the library loads; a pool thread whose
  // allocation fails spins instead of exiting, so the pool is kept to one thread.
  const std::string kQuietBlas = "export OPENBLAS_NUM_THREADS=1;";
  TempDir dir;
  auto starts_within = [&](long kib) {
    return run_pipescope(dir, "--version", kQuietBlas + "ulimit -v " + std::to_string(kib) + ";").exit_code == 0;
  };
  long low = 16 * 1024, high = 16 * 1024 * 1024;  // KiB: it starts within 16 GiB
  ASSERT_TRUE(starts_within(high));
  while (high - low > 8 * 1024) {
    long mid = (low + high) / 2;
    (starts_within(mid) ? high : low) = mid;
  }
  const std::string limit = kQuietBlas + "ulimit -v " + std::to_string(high + 256 * 1024) + ";";
  testing::CommandResult r = run_pipescope(dir, "simulate --profile " + kToy + " -K 4 -M 6000000 --json", limit);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("pipescope: internal error"), std::string::npos) << r.err;
#endif
}

TEST(ReliabilityCli, AFailedOutputLeavesNoOutputFileBehind) {
  // -o can be written but --trace cannot: neither is written (all or nothing), no
  // temporary file is left, and an older out.json stays as it was.
  TempDir dir;
  testing::CommandResult r = run_pipescope(
      dir, "simulate --profile " + kToy + " -K 2 -M 4 -o out.json --trace /nonexistent/dir/t.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/dir/t.json: cannot write file"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.json")));
  dir.write("out.json", "old\n");
  r = run_pipescope(dir, "simulate --profile " + kToy + " -K 2 -M 4 -o out.json --trace /nonexistent/t.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(testing::read_text(dir.file("out.json")), "old\n");
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1) << "a temporary file was left behind";
}

TEST(ReliabilityCli, AKilledCommandNeverLeavesATruncatedFile) {
  // SIGKILL at 0.3 s into a simulation of 2.4e7 ops that writes a ~1 KB JSON at the
  // end: wherever the kill lands, out.json is the old text or a complete prediction.
  TempDir dir;
  dir.write("out.json", "old\n");
  testing::CommandResult r =
      run_pipescope(dir, "simulate --profile " + kToy + " -K 4 -M 3000000 -o out.json", "timeout -s KILL 0.3");
  std::string text = testing::read_text(dir.file("out.json"));
  if (text != "old\n") {
    EXPECT_TRUE(nlohmann::json::accept(text)) << "truncated: " << text.size() << " bytes";
  }
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 137) << r.exit_code;
}

}  // namespace
}  // namespace pipescope
