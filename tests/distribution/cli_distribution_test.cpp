// `simulate --samples` and `plan --objective` end to end: one JSON object with the
// "distribution" keys (docs/step-distributions.md); the same bytes whatever --threads; CV 0 gives
// the deterministic step; malformed flags exit 2 naming the flag.
#include <gtest/gtest.h>

#include "tests/support/cli_run.h"
#include "tests/support/source_paths.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace {

using Result = pipescope::testing::CliResult;
Result run(const std::string& args) { return pipescope::testing::run_cli(args); }

const std::string kPlan = std::string("simulate --profile ") + PIPESCOPE_SOURCE_DIR + "/profiles/gpt-tiny-cpu.json -K 4 -M 8";

}  // namespace

TEST(CliDistribution, JsonCarriesTheDistributionAndIsTheSameWhateverTheThreads) {
  const std::string flags = " --samples 200 --jitter 0.1 --straggler 0.05:1.5 --link-jitter 0.05 --seed 9 --json";
  const Result one = run(kPlan + flags + " --threads 1");
  ASSERT_EQ(one.code, 0) << one.out;
  const nlohmann::json j = nlohmann::json::parse(one.out);  // exactly one object
  const auto& d = j.at("distribution");
  for (const char* key : {"samples", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "bubble", "critical_path", "histogram"}) {
    EXPECT_TRUE(d.contains(key)) << key;
  }
  EXPECT_EQ(d.at("samples"), 200);
  EXPECT_LE(d.at("p50_ms").get<double>(), d.at("p90_ms").get<double>());
  EXPECT_LE(d.at("p90_ms").get<double>(), d.at("p99_ms").get<double>());
  EXPECT_EQ(d.at("critical_path").size(), 4u);
  EXPECT_EQ(run(kPlan + flags + " --threads 3").out, one.out);
}

TEST(CliDistribution, CvZeroGivesTheDeterministicStep) {
  const Result r = run(kPlan + " --samples 5 --jitter 0 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j.at("distribution").at("p99_ms").get<double>(), j.at("step_time_ms").get<double>());
  EXPECT_DOUBLE_EQ(j.at("distribution").at("mean_ms").get<double>(), j.at("step_time_ms").get<double>());
}

TEST(CliDistribution, MalformedFlagsExit2NamingTheFlag) {
  for (const char* bad : {" --jitter 0.1", " --samples 10 --jitter x", " --samples 10 --straggler 0.5",
                          " --samples 10 --straggler 2:3", " --samples 10 --straggler 0.5:0.5", " --samples 0",
                          " --samples 10 --link-jitter -1", " --samples 10 --jitter profile"}) {
    const Result r = run(kPlan + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.out;
  }
  EXPECT_NE(run(kPlan + " --samples 10 --straggler 0.5").out.find("--straggler"), std::string::npos);
  EXPECT_NE(run(kPlan + " --samples 10 --jitter profile").out.find("no measured spread"), std::string::npos);
}

TEST(CliDistribution, PlanObjectiveSaysWhetherTheWinnerChanged) {
  const std::string plan = std::string("plan --profile ") + PIPESCOPE_SOURCE_DIR +
                           "/profiles/gpt-tiny-cpu.json -D 2 -N 8 --recompute off --objective p99 --samples 50 --jitter 0.1";
  const Result r = run(plan);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Ranked by the p99 step over 50 jittered samples"), std::string::npos) << r.out;
  EXPECT_EQ(run(plan.substr(0, plan.find(" --objective")) + " --objective p95").code, 2);
}
