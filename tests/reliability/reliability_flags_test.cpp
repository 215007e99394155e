// Hostile values on the flags of the LLM-scale commands (issue 40, docs/reliability.md):
// each category the issue found (a count near 2^31 that hung or divided by zero, NaN and
// infinity, a negative value read as "not given", an empty value, contradictory flags, a
// rank order one command took and its sibling refused) exits 2 within 20 s, with the exact
// message that names the flag, and writes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/reliability/reliability_util.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

using testing::run_pipescope;
using testing::TempDir;

const std::string kLlama = std::string(" --hf-config '") + PIPESCOPE_SOURCE_DIR + "/profiles/hf/llama-3-8b.json' --seq-length 4096";
const std::string kPlan = "llm-plan --gpu h100-sxm" + kLlama + " --gpus 8 --global-batch-size 64";
const std::string kTime = "llm-time --gpu h100-sxm" + kLlama;
const std::string kMemory = "llm-memory" + kLlama + " --gpus 8 --global-batch-size 64";

// Exit 2 (not a signal, not 124 from `timeout 20`), `message` on stderr, nothing on
// stdout, and the folder as empty as before (--out, where given, names a file in it).
void expect_refused(const std::string& args, const std::string& message) {
  SCOPED_TRACE("pipescope " + args);
  TempDir dir;
  const testing::CommandResult r = run_pipescope(dir, args, "timeout 20");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) ADD_FAILURE() << "left behind: " << e.path();
}

// Before: SIGFPE (divisors' int k overflowed past 2^31 - 1, then n % 0) and an endless
// doubling of b. The limits: 2^20 GPUs (hardware files'), 2^30 sequences (plan files' M).
TEST(ReliabilityFlags, CountsNearTwoToTheThirtyOneExitTwoNamingTheFlag) {
  expect_refused("llm-plan --gpu h100-sxm" + kLlama + " --gpus 2147483647 --global-batch-size 64",
                 "pipescope: error: --gpus: expected 1 to 1048576, got 2147483647");
  expect_refused(kPlan + " --micro-batch-size 2147483647",
                 "pipescope: error: --micro-batch-size: expected 0 to 1073741824, got 2147483647");
  expect_refused(kPlan + " --max-micro-batch-size 2147483647",
                 "pipescope: error: --max-micro-batch-size: expected 1 to 1073741824, got 2147483647");
  expect_refused(kPlan + " --max-virtual-stages 65", "pipescope: error: --max-virtual-stages: expected 1 to 64, got 65");
  expect_refused(kTime + " --gpus 2147483647", "pipescope: error: --gpus: expected 1 to 1048576, got 2147483647");
  expect_refused(kTime + " --global-batch-size 2147483647",
                 "pipescope: error: --global-batch-size: expected 1 to 1073741824, got 2147483647");
  expect_refused(kTime + " --tensor-model-parallel-size 1048576 --pipeline-model-parallel-size 1048576",
                 "pipescope: error: --gpus: t * cp * p = 1099511627776 GPUs, beyond 1048576");
  expect_refused(kTime + " --num-layers 2147483647", "pipescope: error: --num-layers: expected 1 to 1000000, got 2147483647");
  expect_refused(kTime + " --make-vocab-size-divisible-by 65536 --tensor-model-parallel-size 32768 --gpus 32768",
                 "pipescope: error: --make-vocab-size-divisible-by: the vocabulary 128256 padded to a multiple of "
                 "65536 x t = 2147483648 is 2147483648, beyond 1073741824");
}

// Before: NaN passed `< 0` and --memory-gb nan planned against the GPU file's memory.
TEST(ReliabilityFlags, NanAndInfinityAreRefused) {
  expect_refused(kPlan + " --memory-gb nan --out plan.json",
                 "pipescope: error: --memory-gb: expected a finite number of GB >= 0 (0: the GPU file's), got nan");
  expect_refused(kPlan + " --memory-gb inf", "pipescope: error: --memory-gb: expected a finite number of GB >= 0 (0: the "
                                             "GPU file's), got inf");
  expect_refused(kPlan + " --memory-headroom inf", "pipescope: error: --memory-headroom: expected a number of GB >= 0, got inf");
  expect_refused(kTime + " --rotary-base nan", "pipescope: error: --rotary-base: expected a positive number, got nan");
}

// Before: the search read a negative pin as 0 (search) and llm-time a negative v as 1.
TEST(ReliabilityFlags, ANegativeValueIsAnErrorNeverNotGiven) {
  expect_refused(kPlan + " --tensor-model-parallel-size -4",
                 "pipescope: error: --tensor-model-parallel-size: expected 0 to 1048576, got -4");
  expect_refused(kPlan + " --virtual-pipeline-size -2", "pipescope: error: --virtual-pipeline-size: expected 0 to 64, got -2");
  expect_refused(kPlan + " --pipeline-model-parallel-size -1",
                 "pipescope: error: --pipeline-model-parallel-size: expected 0 to 1048576, got -1");
  expect_refused(kTime + " --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank -2",
                 "pipescope: error: --num-virtual-stages-per-pipeline-rank: expected 0 to 64, got -2");
  expect_refused(kTime + " --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage -4",
                 "pipescope: error: --num-layers-per-virtual-pipeline-stage: expected 0 to 1000000, got -4");
  expect_refused(kTime + " --kv-channels -1", "pipescope: error: --kv-channels: expected 0 to 16777216, got -1");
  expect_refused(kTime + " --moe-ffn-hidden-size -1", "pipescope: error: --moe-ffn-hidden-size: expected 0 to 16777216, got -1");
  expect_refused(kMemory + " --tensor-model-parallel-size -4",
                 "pipescope: error: --tensor-model-parallel-size: expected a positive integer, got -4");
}

// Before: an empty string was a string option's "not given" (--offload-fraction "" with
// --offload all offloaded all of every stash).
TEST(ReliabilityFlags, AnEmptyValueIsAnError) {
  const std::string toy = std::string(" --profile '") + PIPESCOPE_SOURCE_DIR + "/profiles/toy-uniform.json'";
  expect_refused("simulate" + toy + " -K 2 -M 4 --offload all --offload-fraction ''",
                 "--offload-fraction: expected a value, got an empty string");
  expect_refused(kTime + " --sharding ''", "--sharding: expected a value, got an empty string");
  expect_refused(kTime + " --schedule ''", "--schedule: expected a value, got an empty string");
  expect_refused(kPlan + " --out ''", "--out: expected a value, got an empty string");
}

// Before: the flag that lost was dropped without a word. Each message names both.
TEST(ReliabilityFlags, ContradictionsAreRefusedNamingBothFlags) {
  TempDir dir;
  ASSERT_EQ(run_pipescope(dir, kPlan + " --out plan.json").exit_code, 0);
  const std::string plan = " --plan '" + dir.file("plan.json") + "'";
  expect_refused("llm-memory" + plan + " --tensor-model-parallel-size 2",
                 "--tensor-model-parallel-size excludes --plan");
  expect_refused("llm-memory" + plan + " --sharding zero-1", "--sharding excludes --plan");
  EXPECT_EQ(run_pipescope(dir, "llm-memory" + plan + " --gpus 8").exit_code, 0);  // checked against the plan's job
  EXPECT_EQ(run_pipescope(dir, "llm-memory" + plan + " --framework megatron").exit_code, 0);  // the plan's own
  expect_refused("llm-memory" + plan + " --framework torch",
                 "pipescope: error: --framework torch: " + dir.file("plan.json") + " holds a job for megatron");
  expect_refused(kTime + " --gpus 4 --use-distributed-optimizer --sharding none",
                 "pipescope: error: --use-distributed-optimizer and --sharding none: give one "
                 "(--use-distributed-optimizer is --sharding distributed-optimizer)");
  EXPECT_EQ(run_pipescope(dir, kTime + " --gpus 4 --use-distributed-optimizer --sharding distributed-optimizer").exit_code,
            0);  // the alias beside the name it stands for agrees with it
}

// Before: llm-memory took any --order (it never placed a group); llm-plan and llm-time
// refused it. validate_layout checks it now, for every command.
TEST(ReliabilityFlags, EveryCommandRefusesTheSameRankOrder) {
  expect_refused(kMemory + " --order tp-dp-x", "pipescope: error: order: \"tp-dp-x\": unknown group \"x\"");
  expect_refused(kTime + " --order tp-dp-x", "pipescope: error: order: \"tp-dp-x\": unknown group \"x\"");
  expect_refused(kPlan + " --order tp-dp-x", "pipescope: error: order: \"tp-dp-x\": unknown group \"x\"");
  expect_refused(kMemory + " --order tp-cp-ep-dp", "pipescope: error: order: \"tp-cp-ep-dp\": expected a permutation");
}

// The profile world's flags (plan --profile, sweep, simulate, run) under the same limits
// (core/limits.h). Before: `plan --profile --batch 2147483647` exited 0 with a 10 PiB
// micro-batch, -N 2^63 - 1 never ended (the divisors of N), --replicas 2^31 - 1 overflowed
// K x r into "-4 devices", --samples 2^31 - 1 exited 1 out of memory, and a 2^31 - 1
// micro-batch size was called "not a whole number".
const std::string kAmoeba = std::string(" --profile '") + PIPESCOPE_SOURCE_DIR + "/profiles/amoebanet-like.json'";

TEST(ReliabilityFlags, TheProfileWorldsCountsAreRangeChecked) {
  expect_refused("plan" + kAmoeba + " --devices 8 --batch 2147483647",
                 "pipescope: error: --batch: expected 1 to 1073741824, got 2147483647");
  expect_refused("sweep" + kAmoeba + " -D 8 -N 9223372036854775807 -o sw",
                 "pipescope: error: --batch: expected 1 to 1073741824, got 9223372036854775807");
  expect_refused("plan" + kAmoeba + " --devices 2097152 --batch 8",
                 "pipescope: error: --devices: expected 1 to 1048576, got 2097152");
  expect_refused("plan" + kAmoeba + " --devices 8 --batch 8 --threads 100000",
                 "pipescope: error: --threads: expected 0 to 1024, got 100000");
  expect_refused("plan" + kAmoeba + " --devices 8 --batch 8 --max-stages 2147483647",
                 "pipescope: error: --max-stages: expected 0 to 1048576, got 2147483647");
  expect_refused("plan" + kAmoeba + " --devices 8 --batch 8 --objective p99 --samples 2147483647",
                 "pipescope: error: --samples: expected 1 to 100000, got 2147483647");
  expect_refused("simulate" + kAmoeba + " -K 4 -M 4 --replicas 2147483647",
                 "pipescope: error: --replicas: expected 1 to 1048576, got 2147483647");
  expect_refused("simulate" + kAmoeba + " -K 4 -M 4 --replicas 300000",
                 "pipescope: error: --replicas: --stages 4 x --replicas 300000 is more than 1048576 devices");
  expect_refused("simulate" + kAmoeba + " -K 4 -M 8 --samples 2147483647 --jitter 0.1",
                 "pipescope: error: --samples: expected 1 to 100000, got 2147483647");
  expect_refused("simulate" + kAmoeba + " -K 4 -M 4 --microbatch-size 2147483647",
                 "pipescope: error: --microbatch-size: expected at most 10^9 samples, got 2147483647");
  expect_refused("simulate" + kAmoeba + " -K 4 -M 4 --microbatch-size 2.5",
                 "pipescope: error: --microbatch-size: expected a whole number of samples, got 2.5");
  expect_refused("run" + kAmoeba + " -K 2 -M 2147483647", "pipescope: error: --microbatches: expected 1 to 1073741824, got 2147483647");
}

// Within the limits the search ends: N = 2^30 has 31 divisors and those above
// kMaxSearchMicrobatches (4096) are skipped, saying so; before, M ran to 2^20 and one
// search of N = 2^30 took minutes.
TEST(ReliabilityFlags, AProfileSearchAtTheBatchLimitAnswersAtOnce) {
  TempDir dir;
  const testing::CommandResult r =
      run_pipescope(dir, "plan" + kAmoeba + " --devices 8 --batch 1073741824 --json", "timeout 60");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: --batch 1073741824: micro-batch counts M above 4096 are not searched"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("\"microbatches\": 4096"), std::string::npos) << r.out.substr(0, 2000);
}

// run and profile do real work per step and round: their counts are bounded too. Before,
// `profile --model --repeats 2147483647` died by SIGSEGV, `run --warmup -3` read as the
// default and exited 0, and `run --steps 2147483647` ran for days.
TEST(ReliabilityFlags, TheExecutorsAndProfilersCountsAreRangeChecked) {
  const std::string model = std::string(" --model '") + PIPESCOPE_SOURCE_DIR + "/models/mlp-uneven.json'";
  const std::string tiny = std::string(" --profile '") + PIPESCOPE_SOURCE_DIR + "/profiles/gpt-tiny-cpu.json' -K 2 -M 4";
  expect_refused("profile" + model + " --repeats 2147483647", "pipescope: error: --repeats: expected 1 to 100000, got 2147483647");
  expect_refused("profile" + model + " --warmup 2147483647", "pipescope: error: --warmup: expected 0 to 100000, got 2147483647");
  expect_refused("profile" + model + " --batch-sizes 2147483647",
                 "pipescope: error: --batch-sizes: expected micro-batch sizes up to 2^30, got 2147483647");
  expect_refused("run" + tiny + " --steps 2147483647", "pipescope: error: --steps: expected 1 to 100000, got 2147483647");
  expect_refused("run" + tiny + " --warmup -3", "--warmup: Value -3 not in range 0 to 100000");
}

}  // namespace
}  // namespace pipescope
