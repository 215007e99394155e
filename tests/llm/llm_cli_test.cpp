// `pipescope llm-memory`: the table and the one --json object carry llm_memory's numbers
// for an HF config or Megatron's flags; a v2 plan's layout is read; bad input exits 2
// naming the flag (or the file and field).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "tests/support/cli_run.h"
#include "core/json_reader.h"
#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm_shapes.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

const std::string kLlama70b = std::string("llm-memory --hf-config ") + PIPESCOPE_SOURCE_DIR +
                              "/profiles/hf/llama-3-70b.json --seq-length 8192 --gpus 64 "
                              "--tensor-model-parallel-size 8 --sequence-parallel --pipeline-model-parallel-size 8 "
                              "--use-distributed-optimizer --recompute-granularity selective --global-batch-size 64";

TEST(LlmMemoryCli, JsonIsOneObjectWithLlmMemorysNumbers) {
  const testing::CliResult r = testing::run_cli(kLlama70b + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);  // exactly one object: parse refuses trailing text
  EXPECT_EQ(j["format"], "pipescope.llm-memory");
  EXPECT_EQ(j["padded_vocabulary"], 129024);  // 128256 to a multiple of 128 x 8
  TransformerShape s = testing::llama3_70b();
  s.vocabulary = 129024;
  ParallelLayout l;
  l.t = 8, l.sequence_parallel = true, l.p = 8, l.d = 1, l.microbatches = 64;
  l.sharding = Sharding::DistributedOptimizer, l.recompute = Recompute::Selective;
  const LlmMemory m = llm_memory(s, validate_layout(s, l, 64));
  ASSERT_EQ(j["stages"].size(), 8U);
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(j["stages"][k]["total_bytes"].get<double>(), m.stages[k].total()) << k;
    EXPECT_EQ(j["stages"][k]["parameters"].get<double>(), m.stages[k].parameters) << k;
  }
  // Rank 0: 10 layers x 8 in flight x 32 s b h / t (f = 3.5 h) + 8 x (8 s b + s b h) / t.
  const double sbh = 8192.0 * 8192;
  EXPECT_EQ(j["stages"][0]["activation_bytes"].get<double>(), 80 * 32 * sbh / 8 + 8 * (8 * 8192 + sbh) / 8);
}

TEST(LlmMemoryCli, TableNamesTheLayoutAndEachRank) {
  const testing::CliResult r = testing::run_cli(kLlama70b);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("t 8 sp cp 1 ep 1 d 1 p 8 v 1, distributed-optimizer, recompute selective"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("   7   10 H"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peak 40.21 GiB per GPU"), std::string::npos) << r.out;
}

TEST(LlmMemoryCli, MegatronFlagsAndAPlanLayout) {
  // GPT-2-medium-like from flags, interleaved: v = 24 / (4 x 3) = 2.
  const std::string flags = "llm-memory --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
                            "--vocab-size 50257 --gpus 8 --pipeline-model-parallel-size 4 "
                            "--num-layers-per-virtual-pipeline-stage 3 --global-batch-size 16 --json";
  const testing::CliResult r = testing::run_cli(flags);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["layout"]["v"], 2);
  EXPECT_EQ(j["layout"]["d"], 2);
  EXPECT_EQ(j["layout"]["microbatches"], 8);
  EXPECT_EQ(j["padded_vocabulary"], 50304);
  // The same layout from a v2 plan file gives the same bytes. The plan says what the layout
  // says (plan_layout refuses a disagreement): one of the d = 2 pipelines, p x v = 8 stages
  // of 3 layers interleaved over 4 positions, b M = 1 x 8 samples.
  const std::string plan = ::testing::TempDir() + "llm_cli_plan.json";
  Json stages = Json::array();
  for (int c = 0; c < 8; ++c) stages.push_back({{"layers", {3 * c, 3 * c + 3}}, {"devices", {c % 4}}});
  std::ofstream(plan) << Json{{"format", "pipescope.plan"}, {"version", 2}, {"profile", "x.json"},
                              {"batch_size", 8}, {"microbatches", 8},
                              {"schedule", {{"kind", "interleaved"}, {"chunks", 2}}}, {"stages", stages},
                              {"layout", j["layout"]}}
                             .dump();
  const testing::CliResult from_plan = testing::run_cli(
      "llm-memory --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --vocab-size 50257 "
      "--gpus 8 --json --plan " + plan);
  ASSERT_EQ(from_plan.code, 0) << from_plan.out;
  EXPECT_EQ(Json::parse(from_plan.out)["stages"], j["stages"]);
  std::remove(plan.c_str());
}

TEST(LlmMemoryCli, BadInputExitsTwoNamingTheFlag) {
  const std::string base = "llm-memory --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 "
                           "--vocab-size 32000 ";
  const std::pair<std::string, std::string> cases[] = {
      {"--gpus 128 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 --context-parallel-size 3 "
       "--global-batch-size 8",
       "--gpus: t * cp * d * p = 8 * 3 * 1 * 4 = 96, but the cluster has 128 GPUs"},
      {"--gpus 8 --global-batch-size 12", "--global-batch-size: expected a positive multiple of --micro-batch-size x d"},
      {"--gpus 8", "--global-batch-size"},
      {"--gpus 8 --global-batch-size 8 --framework jax", "--framework: expected megatron, torch or deepspeed"},
      {"--gpus 8 --global-batch-size 8 --sharding zero-9", "--sharding: expected"},
      {"--gpus 8 --global-batch-size 8 --recompute-granularity some", "--recompute-granularity: expected"},
      {"--gpus 3 --global-batch-size 1 --tensor-model-parallel-size 3",
       "--tensor-model-parallel-size: t = 3 does not divide --num-attention-heads 32"},
      {"--gpus 8 --global-batch-size 8 --num-query-groups 12",
       "--num-query-groups: expected a divisor of --num-attention-heads 32, got 12"},
      {"--gpus 8 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 3 --global-batch-size 2",
       "--num-layers-per-virtual-pipeline-stage: 3 does not divide"},
      {"--gpus 8 --pipeline-model-parallel-size 8 --global-batch-size 8 --sharding zero-2 --framework deepspeed",
       "--sharding: \"zero-2\": DeepSpeed's PipelineEngine asserts zero_optimization.stage < 2 (\"ZeRO-2 and ZeRO-3 "
       "are incompatible with pipeline parallelism\"); it offers stage 0 or 1 (distributed-optimizer), and ZeRO-2 / 3 "
       "only without a pipeline (p = 1)"},
  };
  for (const auto& [flags, message] : cases) {
    const testing::CliResult r = testing::run_cli(base + flags);
    EXPECT_EQ(r.code, 2) << flags << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << flags << "\n" << r.out;
  }
  const testing::CliResult none = testing::run_cli("llm-memory --gpus 8 --global-batch-size 8");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.out.find("--hf-config or --num-layers"), std::string::npos) << none.out;
}

}  // namespace
}  // namespace pipescope
