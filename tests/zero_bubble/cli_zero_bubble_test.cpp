// The new schedules through the `pipescope` command: each one prints, simulates and
// plans; dualpipev refuses M < 2K and zb-auto a cap below 1 with exit 2 naming the
// rule; zb-v fills in its 2 chunks; plan's default --schedules lists all eight.
#include <gtest/gtest.h>

#include "tests/support/cli_run.h"
#include "tests/support/source_paths.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

using Result = pipescope::testing::CliResult;
Result run(const std::string& args) { return pipescope::testing::run_cli(args); }

const std::string kProfile = std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-tiny-cpu.json";

TEST(CliZeroBubble, EveryNewSchedulePrintsAndSimulates) {
  for (const std::string kind : {"zb-h2", "zb-v", "dualpipev", "zb-auto"}) {
    const Result diagram = run("schedule -K 4 -M 8 --schedule " + kind);
    EXPECT_EQ(diagram.code, 0) << kind << ": " << diagram.out;
    EXPECT_NE(diagram.out.find(kind + ", K = 4, M = 8"), std::string::npos) << diagram.out;
    const Result sim = run("simulate --profile " + kProfile + " -K 4 -M 8 --schedule " + kind + " --json");
    EXPECT_EQ(sim.code, 0) << kind << ": " << sim.out;
    EXPECT_NE(sim.out.find("\"schedule\": \"" + kind + "\""), std::string::npos) << sim.out;
  }
}

TEST(CliZeroBubble, RequirementsAreRefusedWithExit2) {
  const Result few = run("schedule -K 4 -M 7 --schedule dualpipev");
  EXPECT_EQ(few.code, 2) << few.out;
  EXPECT_NE(few.out.find("M >= 2K"), std::string::npos) << few.out;
  const Result chunks = run("simulate --profile " + kProfile + " -K 2 -M 4 --schedule zb-v --chunks 4");
  EXPECT_EQ(chunks.code, 2) << chunks.out;
  EXPECT_NE(chunks.out.find("2 chunks"), std::string::npos) << chunks.out;
  const Result cap = run("simulate --profile " + kProfile + " -K 2 -M 4 --schedule zb-auto --max-inflight 0");
  EXPECT_EQ(cap.code, 0) << cap.out;  // 0 = the default, K
  const Result negative = run("simulate --profile " + kProfile + " -K 2 -M 4 --schedule zb-auto --max-inflight -1");
  EXPECT_EQ(negative.code, 2) << negative.out;
}

// Every schedule by default, zb-auto (an order searched per candidate) included.
// --activation-budget: a negative budget, one below a micro-batch's stash and a budget
// for another schedule exit 2 naming the flag; a budget that holds the stashes runs.
TEST(CliZeroBubble, ActivationBudgetIsCheckedAndNamed) {
  const std::string base = "simulate --profile " + kProfile + " -K 2 -M 4 --schedule zb-auto --activation-budget ";
  for (const auto& [value, expect] : {std::pair<std::string, std::string>{"-5", "--activation-budget: expected a number of bytes >= 0"},
                                      {"1", "--activation-budget: 1 bytes is below one micro-batch's stash on device"},
                                      {"0", "--activation-budget: 0 bytes is below one micro-batch's stash"}}) {
    const Result r = run(base + value);
    EXPECT_EQ(r.code, 2) << value << ": " << r.out;
    EXPECT_NE(r.out.find(expect), std::string::npos) << r.out;
  }
  const Result other = run("simulate --profile " + kProfile + " -K 2 -M 4 --schedule zb-h1 --activation-budget 100000");
  EXPECT_EQ(other.code, 2) << other.out;
  EXPECT_NE(other.out.find("--activation-budget: only zb-auto takes a byte budget"), std::string::npos) << other.out;
  const Result fits = run(base + "1000000000 --json");
  EXPECT_EQ(fits.code, 0) << fits.out;
}

// What follows `"key": ` in a JSON text, up to the next comma or newline ("" if absent).
std::string field(const std::string& json, const std::string& key) {
  const std::size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return "";
  const std::size_t from = at + key.size() + 4;
  return json.substr(from, json.find_first_of(",\n", from) - from);
}

// --optimizer-step: post-validation over 4 steps reports a steady state; run runs it (in
// model time with the prediction's steady state); pipedream refuses it (no flush) with
// exit 2 naming the flag; plan takes it.
TEST(CliZeroBubble, OptimizerStepPostValidation) {
  const std::string sim = "simulate --profile " + kProfile + " -K 2 -M 4 --schedule zb-h1 --steps 4 --json";
  const Result pv = run(sim + " --optimizer-step post-validation");
  ASSERT_EQ(pv.code, 0) << pv.out;
  EXPECT_NE(pv.out.find("optimizer step: post-validation"), std::string::npos) << pv.out;
  EXPECT_NE(pv.out.find("steady_state_step_time_ms"), std::string::npos) << pv.out;
  EXPECT_NE(pv.out.find("\"optimizer_step\": \"post-validation\""), std::string::npos) << pv.out;
  const Result bad = run(sim + " --optimizer-step eventually");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("--optimizer-step"), std::string::npos) << bad.out;
  // run --clock model replays the plan with the cost model's times: its steady-state step
  // is the prediction's, printed to the same digits.
  const Result runs = run("run --profile " + kProfile +
                          " -K 2 -M 4 --schedule zb-h1 --steps 4 --json --clock model --optimizer-step post-validation");
  ASSERT_EQ(runs.code, 0) << runs.out;
  EXPECT_NE(runs.out.find("every check passed"), std::string::npos) << runs.out;
  EXPECT_EQ(field(runs.out, "steady_state_step_time_ms"), field(pv.out, "steady_state_step_time_ms")) << runs.out;
  const Result clock = run("run --profile " + kProfile + " -K 2 -M 4 --clock sundial");
  EXPECT_NE(clock.code, 0);
  EXPECT_NE(clock.out.find("--clock"), std::string::npos) << clock.out;
  const Result async = run("simulate --profile " + kProfile + " -K 2 -M 4 --schedule pipedream --optimizer-step post-validation");
  EXPECT_EQ(async.code, 2) << async.out;
  EXPECT_NE(async.out.find("--optimizer-step post-validation: pipedream"), std::string::npos) << async.out;
  const Result plan = run("plan --profile " + kProfile + " -D 2 -N 8 --schedules 1f1b,zb-h1 --optimizer-step post-validation");
  EXPECT_EQ(plan.code, 0) << plan.out;
}

// --p2p blocking on simulate, run, plan and sweep; the notes say so; another value is
// refused with exit 2 naming the flag.
TEST(CliZeroBubble, BlockingP2p) {
  const std::string sim = "simulate --profile " + kProfile + " -K 2 -M 4 --schedule 1f1b --json --p2p ";
  const Result blocking = run(sim + "blocking");
  ASSERT_EQ(blocking.code, 0) << blocking.out;
  EXPECT_NE(blocking.out.find("p2p: blocking"), std::string::npos) << blocking.out;
  for (const std::string& cmd : {"simulate --profile " + kProfile + " -K 2 -M 4", "run --profile " + kProfile + " -K 2 -M 4",
                                "plan --profile " + kProfile + " -D 2 -N 8", "sweep --profile " + kProfile + " -D 2 -N 8"}) {
    const Result bad = run(cmd + " --p2p sometimes");
    EXPECT_EQ(bad.code, 2) << cmd << ": " << bad.out;
    EXPECT_NE(bad.out.find("--p2p"), std::string::npos) << cmd << ": " << bad.out;
    const bool sweep = cmd.rfind("sweep", 0) == 0;  // sweep writes PREFIX.csv and PREFIX.json
    const Result ok = run(cmd + " --p2p blocking " + (sweep ? "-o " + ::testing::TempDir() + "/p2p-sweep" : "--json"));
    EXPECT_EQ(ok.code, 0) << cmd << ": " << ok.out;
  }
  // run --clock model under blocking: the prediction's step, to the printed digit.
  const Result measured = run("run --profile " + kProfile + " -K 2 -M 4 --steps 2 --json --clock model --p2p blocking");
  ASSERT_EQ(measured.code, 0) << measured.out;
  EXPECT_EQ(field(measured.out, "step_time_ms"), field(blocking.out, "step_time_ms")) << measured.out;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

// The hardware file's "p2p" and the plan file's: a plan's wins over the hardware's and
// --p2p over both; a bad value exits 2 naming the file and the field; plan -o writes the
// flag's value into the plan, and export --to megatron says it in Megatron-LM's words.
TEST(CliZeroBubble, P2pFromFiles) {
  const std::string hw = write_temp("p2p-hw.json", R"({"format": "pipescope.hardware", "version": 1, "name": "two",
    "devices": 2, "memory_bytes": 80000000000, "link": {"bandwidth_gb_per_s": 0.01, "latency_us": 10}, "p2p": "blocking"})");
  const std::string sim = "simulate --profile " + kProfile + " -K 2 -M 4 --hardware " + hw;
  EXPECT_NE(run(sim).out.find("p2p: blocking"), std::string::npos);
  EXPECT_EQ(run(sim + " --p2p overlapped").out.find("p2p: blocking"), std::string::npos);
  const std::string bad_hw = write_temp("p2p-bad-hw.json", R"({"format": "pipescope.hardware", "version": 1, "name": "two",
    "devices": 2, "memory_bytes": 8, "link": {"bandwidth_gb_per_s": 1, "latency_us": 1}, "p2p": "lazy"})");
  const Result bad = run("simulate --profile " + kProfile + " -K 2 -M 4 --hardware " + bad_hw);
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("p2p-bad-hw.json: p2p: expected \"overlapped\", \"blocking\" or \"batched\", got \"lazy\""), std::string::npos)
      << bad.out;

  const std::string plan = ::testing::TempDir() + "/p2p-plan.json";
  const Result planned = run("plan --profile " + kProfile + " -D 2 -N 8 --schedules interleaved --p2p blocking -o " + plan);
  ASSERT_EQ(planned.code, 0) << planned.out;
  const Result shown = run("validate " + plan);
  EXPECT_EQ(shown.code, 0) << shown.out;
  const Result from_plan = run("simulate --plan " + plan);
  EXPECT_NE(from_plan.out.find("p2p: blocking"), std::string::npos) << from_plan.out;
  const Result megatron = run("export --to megatron --plan " + plan + " --profile " + kProfile);
  ASSERT_EQ(megatron.code, 0) << megatron.out;
  EXPECT_NE(megatron.out.find("--no-overlap-p2p-communication"), std::string::npos) << megatron.out;
  const Result overlapped = run("export --to megatron --plan " + plan + " --profile " + kProfile + " --p2p overlapped");
  EXPECT_EQ(overlapped.out.find("overlap-p2p"), std::string::npos) << overlapped.out;
}

TEST(CliZeroBubble, PlanConsidersEveryScheduleByDefault) {
  const Result help = run("plan --help");
  EXPECT_NE(help.out.find("gpipe,1f1b,interleaved,zb-h1,zb-h2,zb-v,dualpipev,zb-auto"), std::string::npos) << help.out;
  const Result plan = run("plan --profile " + kProfile + " --devices 4 --batch 16 --max-stages 4");
  EXPECT_EQ(plan.code, 0) << plan.out;
  const Result with_auto = run("plan --profile " + kProfile + " --devices 4 --batch 16 --max-stages 4 --schedules 1f1b,zb-auto");
  EXPECT_EQ(with_auto.code, 0) << with_auto.out;
}

}  // namespace
