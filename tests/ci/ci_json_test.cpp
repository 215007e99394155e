// Every `--json` prints exactly one JSON object on stdout: every command that has the
// flag runs with it and with each other flag that prints or writes (alone and all
// together), and its stdout must parse as one object, whatever the exit code (0, or 4
// for a violated gate); a refused combination (exit 2) leaves stdout empty.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/ci/ci_util.h"

using namespace pipescope::ci_testing;

namespace {

// Runs `base --json EXTRA` for each extra and checks the contract.
void expect_one_object_each(const std::string& base, const std::vector<std::string>& extras) {
  for (const std::string& extra : extras) {
    const Outcome r = run_pipescope(base + " --json " + extra);
    SCOPED_TRACE(base + " --json " + extra);
    if (r.code == 0 || r.code == 4) {
      EXPECT_TRUE(is_one_json_object(r.out)) << "exit " << r.code << ", stdout:\n" << r.out << "\nstderr:\n" << r.err;
    } else {
      EXPECT_EQ(r.code, 2) << r.out << r.err;
      EXPECT_EQ(r.out, "") << "a refused command printed on stdout";
      EXPECT_NE(r.err, "") << "a refused command must say why on stderr";
    }
  }
}

std::string in_scratch(const std::string& name) { return (scratch() / name).string(); }

}  // namespace

TEST(CiJson, SimulateWithEveryPrintingFlag) {
  const std::string trace = in_scratch("s-trace.json"), out = in_scratch("s-out.json"), junit = in_scratch("s.xml");
  expect_one_object_each("simulate --profile " + shipped("toy-uniform.json") + " -K 4 -M 4 --schedule zb-h1",
                         {"", "--trace " + trace, "-o " + out, "--max-bubble 1 --junit " + junit,
                          "--max-bubble 0 --max-step-ms 1", "--microbatch-size 64",
                          "--hardware " + shipped("h200-8x-nvlink.json") + " --require-fit",
                          "--trace " + trace + " -o " + out + " --max-bubble 1 --max-step-ms 1 --junit " + junit,
                          "-o -", "--trace -", "--markdown"});
}

TEST(CiJson, PlanWithEveryPrintingFlag) {
  const std::string out = in_scratch("p-plan.json"), junit = in_scratch("p.xml");
  expect_one_object_each("plan --profile " + shipped("toy-uniform.json") + " --devices 2 --batch 4",
                         {"", "--top 1", "-o " + out, "--max-step-ms 1e9 --junit " + junit, "--max-step-ms 0.001",
                          "-o " + out + " --top 3 --max-bubble 0 --junit " + junit, "-o -", "--markdown"});
}

TEST(CiJson, RunWithEveryPrintingFlag) {
  const std::string trace = in_scratch("r-trace.json"), out = in_scratch("r-out.json"), junit = in_scratch("r.xml");
  expect_one_object_each("run --profile " + shipped("gpt-tiny-cpu.json") + " -K 2 -M 2 --steps 1",
                         {"", "--compare", "--check-gradients", "--trace " + trace + " -o " + out,
                          "--max-step-ms 1e9 --junit " + junit, "--max-step-ms 0.000001",
                          "--compare --check-gradients --trace " + trace + " -o " + out + " --max-bubble 1 --junit " +
                              junit,
                          "-o -", "--trace -", "--markdown", "--optimizer foo"});
}

TEST(CiJson, CompareWithEveryPrintingFlag) {
  const std::string pred = in_scratch("c-pred.json"), meas = in_scratch("c-meas.json"), junit = in_scratch("c.xml");
  ASSERT_EQ(run_pipescope("simulate --profile " + shipped("toy-uniform.json") + " -K 2 -M 4 -o " + pred).code, 0);
  ASSERT_EQ(run_pipescope("simulate --profile " + shipped("toy-uniform.json") + " -K 2 -M 8 -o " + meas).code, 0);
  expect_one_object_each("compare " + pred + " " + meas,
                         {"", "-o " + in_scratch("c-out.json"), "--max-step-error 1000 --junit " + junit,
                          "--max-step-error 0 --max-memory-error 0", "-o -", "--markdown"});
}

TEST(CiJson, ProfileOutputsAreOneObject) {
  // `profile synth` prints the profile on stdout by default; `profile gemm --json` needs a GPU.
  Outcome r = run_pipescope("profile synth --kind uniform --layers 4");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(is_one_json_object(r.out)) << r.out;
  r = run_pipescope("profile gemm --json --m 64 --n 64 --k 64 --repeats 1");
  if (r.code == 0) {
    EXPECT_TRUE(is_one_json_object(r.out)) << r.out;
  } else {
    EXPECT_EQ(r.out, "") << "profile gemm failed (no GPU?) but printed on stdout";
  }
}

// What CI does: a measurement saved from `run --json` stdout is a valid input
// of `compare` (and the gradient check's largest error is a key, not a text line).
TEST(CiJson, CompareAcceptsRunJsonSavedFromStdout) {
  const std::string profile = shipped("gpt-tiny-cpu.json");
  const std::string pred = in_scratch("saved-pred.json"), meas = in_scratch("input-saved-meas.json");
  ASSERT_EQ(run_pipescope("simulate --profile " + profile + " -K 2 -M 2 -o " + pred).code, 0);
  const Outcome run = run_pipescope("run --profile " + profile + " -K 2 -M 2 --steps 1 --check-gradients --compare --json");
  ASSERT_EQ(run.code, 0) << run.err;
  std::ofstream(meas) << run.out;
  const nlohmann::json m = nlohmann::json::parse(run.out);
  EXPECT_EQ(m["format"], "pipescope.measurement");
  ASSERT_TRUE(m.contains("gradient_check"));
  EXPECT_LT(m["gradient_check"]["max_relative_error"].get<double>(), 1e-5);  // the design's fp32 oracle
  EXPECT_TRUE(m["gradient_check"]["passed"].get<bool>());
  ASSERT_TRUE(m.contains("comparison"));
  EXPECT_EQ(m["comparison"]["format"], "pipescope.comparison");
  const Outcome cmp = run_pipescope("compare " + pred + " " + meas + " --json");
  ASSERT_EQ(cmp.code, 0) << cmp.err;
  EXPECT_TRUE(is_one_json_object(cmp.out));
}
