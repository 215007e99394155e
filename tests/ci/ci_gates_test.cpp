// CI gates end to end: a violated gate exits 4 after the full result, and names the
// gate, its limit and the value on stderr; --junit and --markdown report every gate.
// The numbers come from the uniform toy profile (16 layers, 1 ms forward and 2 ms
// backward per layer at micro-batch 1, no hardware file: free communication), where
// GPipe and 1F1B take (M+K-1)(t_f+t_b) per step with bubble (K-1)/(M+K-1): with K = 4
// (4 layers per stage: t_f = 4 ms, t_b = 8 ms), M = 4 gives 84 ms and 3/7, M = 8 132 ms.
#include <gtest/gtest.h>

#include <string>

#include "tests/ci/ci_util.h"

using namespace pipescope::ci_testing;

namespace {

const std::string kToy = "simulate --profile " + shipped("toy-uniform.json") + " -K 4 --schedule 1f1b ";

std::string in_scratch(const std::string& name) { return (scratch() / name).string(); }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(CiGates, MaxBubbleAtTheClosedForm) {
  // bubble = 3/7 = 0.428571...: a limit just above passes, just below fails.
  Outcome r = run_pipescope(kToy + "-M 4 --max-bubble 0.4286");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("gate --max-bubble 0.4286: the bubble fraction is 0.428571: ok"), std::string::npos) << r.out;
  r = run_pipescope(kToy + "-M 4 --max-bubble 0.4285");
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.out.find("step time 84.000 ms"), std::string::npos) << "the full result comes first:\n" << r.out;
  EXPECT_NE(r.err.find("pipescope: gate failed: --max-bubble 0.4285: the bubble fraction is 0.428571"),
            std::string::npos)
      << r.err;
}

TEST(CiGates, MaxStepMsAtTheClosedForm) {
  EXPECT_EQ(run_pipescope(kToy + "-M 4 --max-step-ms 84").code, 0);  // at most the limit passes
  const Outcome r = run_pipescope(kToy + "-M 4 --max-step-ms 83.999 --json");
  EXPECT_EQ(r.code, 4);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["step_time_ms"].get<double>(), 84.0);
  ASSERT_EQ(j["gates"].size(), 1u);
  EXPECT_EQ(j["gates"][0]["gate"], "--max-step-ms");
  EXPECT_DOUBLE_EQ(j["gates"][0]["limit"].get<double>(), 83.999);
  EXPECT_DOUBLE_EQ(j["gates"][0]["value"].get<double>(), 84.0);
  EXPECT_FALSE(j["gates"][0]["passed"].get<bool>());
  EXPECT_NE(r.err.find("--max-step-ms 83.999: the step takes 84.000 ms"), std::string::npos) << r.err;
}

TEST(CiGates, RequireFitNamesTheStageAndNeedsHardware) {
  const std::string hw = " --hardware " + shipped("h200-8x-nvlink.json");
  // The README's worked example: every stage fits in 131.32 GiB.
  Outcome r = run_pipescope("simulate --profile " + shipped("gpt-1.3b-h200.json") + hw +
                    " -K 4 -M 16 --microbatch-size 2 --require-fit");
  EXPECT_EQ(r.code, 0) << r.err;
  // A 13B-parameter GPT with Adam needs about 16 bytes per parameter: ~194 GiB on one device.
  r = run_pipescope("simulate --profile " + shipped("gpt-13b-h200.json") + hw + " -K 1 -M 1 --require-fit");
  EXPECT_EQ(r.code, 4) << r.out << r.err;
  EXPECT_NE(r.err.find("--require-fit: stage 0 needs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("of 131.32 GiB device memory"), std::string::npos) << r.err;
  r = run_pipescope(kToy + "-M 4 --require-fit");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--require-fit: give --hardware FILE"), std::string::npos) << r.err;
}

TEST(CiGates, BaselineRegressionAgainstAnEarlierPrediction) {
  const std::string base = in_scratch("baseline.json");
  ASSERT_EQ(run_pipescope(kToy + "-M 4 -o " + base).code, 0);
  // M = 8 takes 132 ms against 84 ms: +57.142857%.
  Outcome r = run_pipescope(kToy + "-M 8 --baseline " + base + " --max-regression 57.15");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run_pipescope(kToy + "-M 8 --baseline " + base + " --max-regression 57.14");
  EXPECT_EQ(r.code, 4);
  EXPECT_NE(r.err.find("--max-regression 57.14%: the step takes 132.000 ms, +57.14% against 84.000 ms in " + base),
            std::string::npos)
      << r.err;
  // Faster than the baseline passes even a zero limit.
  EXPECT_EQ(run_pipescope(kToy + "-M 2 --baseline " + base + " --max-regression 0").code, 0);
  // Another model, or half the pair, is bad input.
  r = run_pipescope("simulate --profile " + shipped("amoebanet-like.json") + " -K 4 -M 4 --baseline " + base +
                " --max-regression 5");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("the baseline is of model"), std::string::npos) << r.err;
  EXPECT_EQ(run_pipescope(kToy + "-M 4 --baseline " + base).code, 2);
  EXPECT_EQ(run_pipescope(kToy + "-M 4 --max-regression 5").code, 2);
  EXPECT_EQ(run_pipescope(kToy + "-M 4 --baseline /nonexistent.json --max-regression 5").code, 2);
}

TEST(CiGates, CompareStepAndMemoryError) {
  // 1F1B keeps min(K-s, M) micro-batches per stage, the same for M = 4 and M = 8, so
  // the memory error is exactly 0 while the step error is 132/84 - 1 = +57.14%.
  const std::string pred = in_scratch("cmp-pred.json"), meas = in_scratch("cmp-meas.json");
  ASSERT_EQ(run_pipescope(kToy + "-M 4 -o " + pred).code, 0);
  ASSERT_EQ(run_pipescope(kToy + "-M 8 -o " + meas).code, 0);
  Outcome r = run_pipescope("compare " + pred + " " + meas + " --max-step-error 57.15 --max-memory-error 0");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run_pipescope("compare " + pred + " " + meas + " --max-step-error 57.14 --max-memory-error 0 --json");
  EXPECT_EQ(r.code, 4);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["gates"].size(), 2u);
  EXPECT_FALSE(j["gates"][0]["passed"].get<bool>());
  EXPECT_NEAR(j["gates"][0]["value"].get<double>(), 100.0 * 48 / 84, 1e-9);
  EXPECT_TRUE(j["gates"][1]["passed"].get<bool>());
  EXPECT_EQ(j["gates"][1]["value"].get<double>(), 0.0);
  EXPECT_NE(r.err.find("--max-step-error 57.14%: the measured step time differs from the prediction by +57.14%"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(count(r.err, "gate failed"), 1u) << r.err;
}

TEST(CiGates, CompareMarkdownShowsEveryValueAndTheGates) {
  const std::string pred = in_scratch("md-pred.json"), meas = in_scratch("md-meas.json");
  ASSERT_EQ(run_pipescope(kToy + "-M 4 -o " + pred).code, 0);
  ASSERT_EQ(run_pipescope(kToy + "-M 8 -o " + meas).code, 0);
  const Outcome r = run_pipescope("compare " + pred + " " + meas + " --max-step-error 60 --markdown");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("### pipescope compare: " + pred + " vs " + meas + "\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("| step_time_ms | 84 | 132 | +57.14% |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| `--max-step-error` | 60% | 57.1429% | pass |"), std::string::npos) << r.out;
}

TEST(CiGates, JunitHasOneTestcasePerGateAndAFailureForEachViolation) {
  const std::string junit = in_scratch("gates.xml");
  const Outcome r = run_pipescope(kToy + "-M 4 --max-bubble 0.5 --max-step-ms 80 --junit " + junit);
  EXPECT_EQ(r.code, 4);
  const std::string xml = slurp(junit);
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"pipescope\" tests=\"2\" failures=\"1\">", 0),
            0u)
      << xml;
  EXPECT_EQ(count(xml, "<testcase "), 2u) << xml;
  EXPECT_EQ(count(xml, "<failure "), 1u) << xml;
  EXPECT_NE(xml.find("name=\"max-step-ms\">\n      <failure type=\"gate\" message=\"--max-step-ms 80: the step takes "
                     "84.000 ms\"/>"),
            std::string::npos)
      << xml;
}

TEST(CiGates, MarkdownSummaryTable) {
  const Outcome r = run_pipescope(kToy + "-M 4 --max-bubble 0.5 --max-step-ms 80 --markdown");
  EXPECT_EQ(r.code, 4);
  EXPECT_EQ(r.out.rfind("### pipescope simulate: toy-uniform, 1f1b, K = 4, M = 4\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("| 84.000 ms | 47.62 samples/s | 42.86% |"), std::string::npos) << r.out;  // 4 samples / 84 ms
  EXPECT_NE(r.out.find("| `--max-bubble` | 0.5 | 0.428571 | pass |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| `--max-step-ms` | 80 ms | 84 ms | **FAIL**: --max-step-ms 80: the step takes 84.000 ms |"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(run_pipescope(kToy + "-M 4 --markdown --json").code, 2);
}

TEST(CiGates, PlanGatesLookAtTheWinner) {
  const Outcome r = run_pipescope("plan --profile " + shipped("toy-uniform.json") + " --devices 4 --batch 8 --json --max-step-ms 0.5");
  EXPECT_EQ(r.code, 4) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const double winner_ms = j["top"][0]["step_ms"].get<double>();
  EXPECT_DOUBLE_EQ(j["gates"][0]["value"].get<double>(), winner_ms);
  EXPECT_NE(r.err.find("--max-step-ms 0.5: the step takes"), std::string::npos) << r.err;
}

TEST(CiGates, JunitMayNotShareAFileWithAnotherOutput) {
  const std::string same = in_scratch("shared-output.xml");
  const Outcome r = run_pipescope(kToy + "-M 4 --max-bubble 1 --junit " + same + " -o " + same);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--junit and --output name the same file"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(same));
}

TEST(CiGates, BadLimitsAreRefusedBeforeAnyWork) {
  for (const char* flags : {"--max-bubble 1.5", "--max-bubble -0.1", "--max-step-ms -1", "--max-regression -101"}) {
    const Outcome r = run_pipescope(kToy + "-M 4 " + flags);
    EXPECT_EQ(r.code, 2) << flags;
    EXPECT_EQ(r.out, "") << flags;
  }
}
