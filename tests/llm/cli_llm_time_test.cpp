// `pipescope llm-time`: Megatron-LM's flags in, the same step as llm/step_time.h out (a
// table, or exactly one JSON object with --json), and bad input exits 2 naming the flag.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli_run.h"
#include "experiments/korthikanti_table5.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

using testing::run_cli;

// Korthikanti et al.'s 175B run: t 8, p 8, 3 chunks of 4 layers, SP + selective.
const std::string k175 =
    "llm-time --gpu a100-80gb --num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
    "--vocab-size 51200 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
    "--num-layers-per-virtual-pipeline-stage 4 --sequence-parallel --recompute-granularity selective "
    "--micro-batch-size 1 --global-batch-size 64 --attention-backend unfused";

TEST(CliLlmTime, JsonIsOneObjectWithTheLibrarysStep) {
  const auto r = run_cli(k175 + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);  // throws unless exactly one JSON value
  EXPECT_EQ(j["format"], "pipescope.llm_time");
  EXPECT_EQ(j["schedule"], "interleaved");
  EXPECT_EQ(j["layout"]["v"], 3);
  EXPECT_EQ(j["layout"]["microbatches"], 64);
  const GpuModel gpu = load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/a100-80gb.json");
  // llm-time times Megatron-LM as it runs by default: its interleaved schedule overlaps p2p
  // (--overlap-p2p-communication, on unless --no-overlap-p2p-communication).
  ParallelLayout layout = korthikanti_layout(kKorthikantiModels[1], true);
  layout.overlap_p2p = true;
  const StepTime st = step_time(korthikanti_shape(kKorthikantiModels[1]), layout, gpu);
  EXPECT_DOUBLE_EQ(j["step_ms"].get<double>(), static_cast<double>(st.step_ns) / 1e6);
}

// --schedule zb-v (torch): the V's step, as llm/step_time.h times it, named in the JSON. Full
// recompute: torch runs none or full (checkpoint_wrapper), not Megatron's selective.
TEST(CliLlmTime, ScheduleFlagTimesTheVShape) {
  const std::string zbv =
      "llm-time --gpu a100-80gb --num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
      "--vocab-size 51200 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
      "--num-layers-per-virtual-pipeline-stage 6 --sequence-parallel --recompute-granularity selective "
      "--micro-batch-size 1 --global-batch-size 64 --framework torch --schedule zb-v --attention-backend unfused --json";
  const auto r = run_cli(zbv);
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schedule"], "zb-v");
  EXPECT_EQ(j["layout"]["v"], 2);
  ParallelLayout l = korthikanti_layout(kKorthikantiModels[1], true);
  l.v = 2, l.schedule = ScheduleKind::ZeroBubbleV;
  l.selective = SelectivePolicy::EveryOtherMatmul;  // torch's selective recompute (torchtitan's per-op policy)
  const GpuModel gpu = load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/a100-80gb.json");
  const StepTime st = step_time(korthikanti_shape(kKorthikantiModels[1]), l, gpu);
  EXPECT_DOUBLE_EQ(j["step_ms"].get<double>(), static_cast<double>(st.step_ns) / 1e6);
}

// The data-parallel overlap a framework runs (llm/framework.h), in the JSON's layout and
// in the step: torch overlaps DDP's gradient all-reduce whether asked or not, so its tail is
// Megatron's with --overlap-grad-reduce. Full recompute, which both run (torch has no
// selective recompute of Megatron's kind).
TEST(CliLlmTime, TorchOverlapsTheGradientReduceUnasked) {
  // Full recompute, which both run alike (their selective recomputes differ: SelectivePolicy).
  std::string dp2 = k175 + " --gpus 128 --json";
  dp2.replace(dp2.find("--recompute-granularity selective"), 33, "--recompute-granularity full");
  const auto megatron = run_cli(dp2), asked = run_cli(dp2 + " --overlap-grad-reduce"),
             torch = run_cli(dp2 + " --framework torch");
  ASSERT_EQ(megatron.code, 0) << megatron.out;
  ASSERT_EQ(torch.code, 0) << torch.out;
  const nlohmann::json m = nlohmann::json::parse(megatron.out), a = nlohmann::json::parse(asked.out),
                       t = nlohmann::json::parse(torch.out);
  EXPECT_EQ(m["layout"]["d"], 2);
  EXPECT_EQ(m["layout"]["overlap_grad_reduce"], false);
  EXPECT_EQ(a["layout"]["overlap_grad_reduce"], true);
  EXPECT_EQ(t["layout"]["overlap_grad_reduce"], true);
  EXPECT_EQ(t["layout"]["overlap_param_gather"], false);  // DDP: nothing to gather
  EXPECT_LT(a["dp_exposed_ms"].get<double>(), m["dp_exposed_ms"].get<double>());
  EXPECT_EQ(t["dp_exposed_ms"], a["dp_exposed_ms"]);
}

TEST(CliLlmTime, TableNamesTheLayout) {
  const auto r = run_cli(k175);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("t 8 +sp cp 1 p 8 v 3 d 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MFU"), std::string::npos);
}

TEST(CliLlmTime, BadFlagsExitTwoNamingTheFlag) {
  const std::string base =
      "llm-time --gpu a100-80gb --num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
      "--vocab-size 51200 ";
  const std::pair<std::string, std::string> cases[] = {
      {"--tensor-model-parallel-size 7", "--tensor-model-parallel-size"},
      {"--pipeline-model-parallel-size 7", "--num-layers"},
      {"--pipeline-model-parallel-size 8 --num-layers-per-virtual-pipeline-stage 5", "--num-layers-per-virtual-pipeline-stage"},
      {"--micro-batch-size 3 --global-batch-size 64", "--global-batch-size"},
      {"--recompute-granularity most", "--recompute-granularity"},
      {"--gpus 12 --tensor-model-parallel-size 8", "--gpus"},
      {"--micro-batch-size 0", "--micro-batch-size"},
      {"--order tp-dp-pp", "order"},
      // --schedule: a name pipescope has, one the --framework runs, a layout its generator takes.
      {"--schedule zbv", "--schedule: unknown schedule"},
      {"--pipeline-model-parallel-size 8 --schedule zb-v", "--schedule: zb-v is not a schedule Megatron-LM runs"},
      {"--pipeline-model-parallel-size 8 --framework torch --schedule zb-v", "schedule: zb-v runs exactly 2 chunks"},
      {"--pipeline-model-parallel-size 8 --num-layers-per-virtual-pipeline-stage 6 --framework torch "
       "--schedule dualpipev --global-batch-size 8", "--global-batch-size: dualpipev needs at least 2p = 16"},
      // a parameter gather to overlap that the layout does not have
      {"--overlap-param-gather", "--overlap-param-gather: Megatron-LM asserts --use-distributed-optimizer"},
      {"--overlap-param-gather --framework deepspeed --use-distributed-optimizer",
       "--overlap-param-gather: DeepSpeed's ZeRO stage 1 all-gathers the updated parameters after"},
  };
  for (const auto& [flags, named] : cases) {
    const auto r = run_cli(base + flags);
    EXPECT_EQ(r.code, 2) << flags << ": " << r.out;
    EXPECT_NE(r.out.find(named), std::string::npos) << flags << ": " << r.out;
  }
  const auto missing = run_cli("llm-time --gpu a100-80gb --num-layers 4");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("--hidden-size"), std::string::npos) << missing.out;
  const auto gpu = run_cli(base + "--gpu nosuch");
  EXPECT_EQ(gpu.code, 2);
  EXPECT_NE(gpu.out.find("--gpu"), std::string::npos) << gpu.out;
}

}  // namespace
}  // namespace pipescope
