// The exec commands end to end through the pipescope binary: run (threads and, when
// built, MPI), run --check-gradients, compare, the fault paths and their exit codes.
// A fault case asserts what failed and how it was reported; none asserts how fast. A
// run that fails on a peer's notice names the fault, not a timeout (its --timeout is
// 60 s); every command runs under `timeout` as a hang guard only (kHangGuard).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "tests/support/source_paths.h"

namespace {

struct Outcome {
  int exit_code;  // 124: killed by the hang guard
  std::string output;
};

// Far above any run here; a hung run is killed (exit 124) instead of hanging ctest.
const std::string kHangGuard = "timeout --kill-after=10 240 ";

Outcome shell(const std::string& command) {
  std::string full = "cd " + std::string(PIPESCOPE_SOURCE_DIR) + " && " + kHangGuard + command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (pipe && fgets(buf.data(), buf.size(), pipe)) out += buf.data();
  int status = pipe ? pclose(pipe) : -1;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, out};
}

const std::string kBin = PIPESCOPE_BINARY;
const std::string kPlan = " --profile profiles/gpt-tiny-cpu.json -K 2 -M 4 ";

TEST(ExecCli, RunChecksGradientsOnTheShippedProfile) {
  Outcome o = shell(kBin + " run" + kPlan + "--schedule zb-h1 --recompute --steps 1 --check-gradients");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("largest relative gradient error"), std::string::npos) << o.output;
}

TEST(ExecCli, CompareReadsPredictionAndMeasurement) {
  const std::string dir = std::string(pipescope::source_paths::binary_dir()) + "/tests/exec/exec_tmp";
  Outcome sim = shell(kBin + " simulate" + kPlan + "-o " + dir + "/pred.json");
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  Outcome run = shell(kBin + " run" + kPlan + "--steps 2 -o " + dir + "/meas.json --trace " + dir + "/trace.json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  Outcome cmp = shell(kBin + " compare " + dir + "/pred.json " + dir + "/meas.json --json");
  ASSERT_EQ(cmp.exit_code, 0) << cmp.output;
  EXPECT_NE(cmp.output.find("\"stage 1 peak_activation_bytes\""), std::string::npos) << cmp.output;
  // Identical accounting rules: the activation peaks agree exactly (error 0).
  EXPECT_NE(cmp.output.find("\"relative_error\": 0.0"), std::string::npos) << cmp.output;
}

// run --compare adds the replay row: the simulator fed with the measured op times.
TEST(ExecCli, RunCompareShowsTheReplayedStepTime) {
  Outcome o = shell(kBin + " run" + kPlan + "--steps 2 --compare");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("step_time_ms, replayed"), std::string::npos) << o.output;
}

TEST(ExecCli, ProfileRefusesAnUnknownStatistic) {
  Outcome o = shell(kBin + " profile --model models/gpt-tiny.json --batch-sizes 1 --statistic mode -o /dev/null");
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_NE(o.output.find("--statistic: expected trimmed-mean or median, got \"mode\""), std::string::npos) << o.output;
}

TEST(ExecCli, BadInputExitsTwoAndFailedRunExitsThree) {
  Outcome bad = shell(kBin + " run --profile profiles/toy-uniform.json -K 2 -M 2");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("has no spec"), std::string::npos) << bad.output;
  Outcome fault = shell(kBin + " run" + kPlan + "--inject-fault 1:forward:2 --timeout 60");
  EXPECT_EQ(fault.exit_code, 3) << fault.output;
  EXPECT_NE(fault.output.find("stage 1 (device 1) failed at forward of micro-batch 2 in step 0: injected fault"),
            std::string::npos) << fault.output;
  EXPECT_EQ(fault.output.find("timed out"), std::string::npos) << fault.output;  // stopped by the notice
}

TEST(ExecCli, AMessageThatNeverArrivesEndsTheRunAfterTheTimeout) {
  // Stage 0 runs forward of micro-batch 1 but its output is lost: stage 1 waits for it
  // until --timeout (2 s), then fails naming what it waited for and from whom, and the
  // other stage stops too: exit 3. Stage 0 waits (2 s too) for that micro-batch's
  // gradient, which cannot come; under load it may time out first. Either report names
  // the stage, the op, micro-batch 1 and the peer it waited for.
  Outcome lost = shell(kBin + " run" + kPlan + "--inject-fault 0:forward:1:drop --timeout 2");
  EXPECT_EQ(lost.exit_code, 3) << lost.output;
  const bool activation = lost.output.find("stage 1 (device 1) failed at forward of micro-batch 1 in step 0: device 1 "
                                           "timed out waiting for the activation for stage 1, micro-batch 1 from "
                                           "device 0") != std::string::npos;
  const bool gradient = lost.output.find("stage 0 (device 0) failed at backward of micro-batch 1 in step 0: device 0 "
                                         "timed out waiting for the gradient for stage 0, micro-batch 1 from "
                                         "device 1") != std::string::npos;
  EXPECT_TRUE(activation || gradient) << lost.output;
}

// Replicated stages end to end: a plan from `pipescope plan` whose stages are
// replicated (D = 4 devices but at most 2 stages forces r >= 2) runs with --plan, and
// -K 2 --replicas 2 runs from the flags; both pass the gradient check (exit 3 above
// 1e-5), say r, and keep the activation peaks equal to the prediction (+0.0%).
const std::string kReplicated = " --profile profiles/gpt-tiny-cpu.json -K 2 --replicas 2 -M 4 --microbatch-size 2 ";

// Activation peaks and total peaks (transients included), all-reduce buffer included: +0.0%.
void expect_exact_peaks(const std::string& output, int positions) {
  for (const char* key : {"peak_activation_bytes", "peak_memory_bytes"}) {
    int peaks = 0;
    std::size_t at = 0;
    while ((at = output.find(key, at)) != std::string::npos) {
      std::size_t eol = output.find('\n', at);
      EXPECT_NE(output.substr(at, eol - at).find("+0.0%"), std::string::npos) << output.substr(at, eol - at);
      ++peaks;
      at = eol;
    }
    EXPECT_EQ(peaks, positions) << key << "\n" << output;
  }
}

TEST(ExecCli, RunsAReplicatedPlanFromThePlanner) {
  const std::string plan = std::string(pipescope::source_paths::binary_dir()) + "/tests/exec/exec_tmp" + "/replicated-plan.json";
  Outcome made = shell(kBin + " plan --profile profiles/gpt-tiny-cpu.json -D 4 -N 8 --max-stages 2 -o " + plan);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  Outcome o = shell(kBin + " run --plan " + plan + " --steps 2 --check-gradients");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find(", r = "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("replicas hold identical parameters"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("largest relative gradient error"), std::string::npos) << o.output;
}

TEST(ExecCli, RunsReplicatedStagesFromTheFlags) {
  Outcome o = shell(kBin + " run" + kReplicated + "--steps 2 --check-gradients --compare");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("K = 2, r = 2"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("replicas hold identical parameters"), std::string::npos) << o.output;
  expect_exact_peaks(o.output, 2);
  // r = 2 cannot split one sample; a fault in replica 1 of stage 1 (worker 3) is named.
  Outcome odd = shell(kBin + " run --profile profiles/gpt-tiny-cpu.json -K 2 --replicas 2 -M 4 --microbatch-size 1");
  EXPECT_EQ(odd.exit_code, 2) << odd.output;
  EXPECT_NE(odd.output.find("divisible by 2, got 1"), std::string::npos) << odd.output;
  Outcome fault = shell(kBin + " run" + kReplicated + "--inject-fault 1/1:forward:2 --timeout 60");
  EXPECT_EQ(fault.exit_code, 3) << fault.output;
  EXPECT_NE(fault.output.find("stage 1 replica 1 (device 3) failed at forward of micro-batch 2"), std::string::npos)
      << fault.output;
  EXPECT_EQ(fault.output.find("timed out"), std::string::npos) << fault.output;  // stopped by the notice
}

#ifdef PIPESCOPE_MPIEXEC
const std::string kMpi = std::string(PIPESCOPE_MPIEXEC) + " --allow-run-as-root --oversubscribe -np ";

// Over MPI as over threads: gradients equal one process's (< 1e-5) and the tracked
// activation peaks equal the prediction exactly ("+0.0%" on every peak_activation line).
TEST(ExecMpi, RunOverMpiKeepsBothOracles) {
  for (std::string schedule : {"1f1b", "interleaved --chunks 2 --recompute", "zb-h1"}) {
    Outcome o = shell(kMpi + "2 " + kBin + " run" + kPlan + "--schedule " + schedule +
                      " --transport mpi --steps 2 --check-gradients --compare");
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("mpi transport"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("largest relative gradient error"), std::string::npos) << o.output;
    expect_exact_peaks(o.output, 2);
  }
}

// D = K x r = 4 ranks: the replicas' MPI all-reduce gives the full-batch gradients and
// identical replicas; a failed replica ends the job naming it.
TEST(ExecMpi, ReplicatedStagesOverMpiKeepBothOracles) {
  Outcome o = shell(kMpi + "4 " + kBin + " run" + kReplicated + "--transport mpi --steps 2 --check-gradients --compare");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("mpi transport"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("replicas hold identical parameters"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("largest relative gradient error"), std::string::npos) << o.output;
  expect_exact_peaks(o.output, 2);
  Outcome fault = shell(kMpi + "4 " + kBin + " run" + kReplicated + "--transport mpi --steps 2 --timeout 60 "
                        "--inject-fault 0/1:backward:1");
  EXPECT_NE(fault.exit_code, 0) << fault.output;
  EXPECT_NE(fault.output.find("stage 0 replica 1 (device 1) failed at backward of micro-batch 1"), std::string::npos)
      << fault.output;
  EXPECT_EQ(fault.output.find("timed out"), std::string::npos) << fault.output;  // stopped by the notice
  Outcome wrong = shell(kMpi + "2 " + kBin + " run" + kReplicated + "--transport mpi --steps 1");
  EXPECT_NE(wrong.output.find("2 pipeline stages x 2 replicas (use mpirun -np 4)"), std::string::npos) << wrong.output;
}

TEST(ExecMpi, FailedRankStopsTheJobNamingTheFault) {
  Outcome o = shell(kMpi + "3 " + kBin + " run --profile profiles/gpt-tiny-cpu.json -K 3 -M 4 --transport mpi "
                    "--steps 2 --timeout 60 --inject-fault 1:forward:2");
  EXPECT_NE(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("stage 1 (device 1) failed at forward of micro-batch 2"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("timed out"), std::string::npos) << o.output;  // stopped by the notice
}

TEST(ExecMpi, DeadRankEndsTheJobNamingTheRank) {
  Outcome o = shell(kMpi + "2 " + kBin + " run" + kPlan + "--transport mpi --steps 2 --timeout 60 "
                    "--inject-fault 1:backward:1:crash");
  EXPECT_NE(o.exit_code, 0) << o.output;
  // mpirun names the rank that died ("Process name: [[job,1],1]"); rank = stage here.
  EXPECT_NE(o.output.find(",1],1]"), std::string::npos) << o.output;
  EXPECT_NE(o.exit_code, 124) << "killed by the hang guard: " << o.output;
}

TEST(ExecMpi, WrongRankCountIsAnInputError) {
  Outcome o = shell(kMpi + "3 " + kBin + " run" + kPlan + "--transport mpi --steps 1");
  EXPECT_NE(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("started with 3 rank(s) but the plan has 2 pipeline stages"), std::string::npos) << o.output;
}
#endif

}  // namespace
