// `pipescope llm-plan`: Megatron-LM's model flags in, llm/layout_search.h's answer out (a
// table with its reasons, or exactly one JSON object with --json), --out writes the best
// as a v2 plan whose layout reads back, and bad input exits 2 naming the flag and numbers.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/json_reader.h"
#include "core/plan.h"
#include "llm/framework.h"
#include "llm/layout.h"
#include "llm/layout_search.h"
#include "llm/plan_layout.h"
#include "tests/support/cli_run.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

using testing::run_cli;

const std::string kSmall =
    "llm-plan --gpu h100-sxm --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --num-query-groups 4 "
    "--ffn-hidden-size 4096 --swiglu --disable-bias-linear --normalization RMSNorm "
    "--untie-embeddings-and-output-weights --vocab-size 32000 --seq-length 2048 --gpus 16 --global-batch-size 64";

LlmSearchRequest small_request() {
  LlmSearchRequest q;
  TransformerShape& s = q.shape;
  s.name = "megatron-flags";
  s.layers = 8, s.hidden = 1024, s.heads = 16, s.kv_heads = 4, s.ffn_hidden = 4096, s.swiglu = true;
  s.bias_linear = false, s.rms_norm = true, s.tied_embeddings = false, s.vocabulary = 32000, s.sequence = 2048;
  q.gpus = 16, q.global_batch = 64;
  return q;
}

TEST(CliLlmPlan, JsonIsOneObjectWithTheSearchsAnswer) {
  const auto r = run_cli(kSmall + " --json --top 3");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);  // throws unless exactly one JSON value
  EXPECT_EQ(j["format"], "pipescope.llm_plan");
  LlmSearchRequest q = small_request();
  q.top = 3;
  const LlmSearchResult want =
      search_layouts(q, load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/h100-sxm.json"));
  ASSERT_EQ(j["best"].size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(j["best"][i]["step_ms"].get<double>(), static_cast<double>(want.best[i].step_ns) / 1e6);
    EXPECT_EQ(j["best"][i]["layout"], layout_to_json(want.best[i].layout));
  }
  EXPECT_EQ(j["search"]["fitting"], want.fitting);
  EXPECT_EQ(j["search"]["simulated"], want.simulated);
  EXPECT_EQ(j["why"].size(), want.why.size());
  EXPECT_EQ(j["runner_ups"].size(), 2U);
}

TEST(CliLlmPlan, TableShowsTheCountsTheLayoutsAndTheReasons) {
  const auto r = run_cli(kSmall);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("searched: 35 (t, cp, d, p) factorizations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("why:\n  t = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("runner-ups:\n  #2 "), std::string::npos) << r.out;
}

TEST(CliLlmPlan, OutWritesTheBestAsAV2PlanWithItsLayout) {
  const std::string dir = ::testing::TempDir() + "llm_plan_out";
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/best.json";
  const auto r = run_cli(kSmall + " --json --top 1 --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  const Plan plan = load_plan(out);
  ASSERT_TRUE(plan.layout.has_value());
  EXPECT_EQ(layout_to_json(*plan_layout(plan)), j["best"][0]["layout"]);
  EXPECT_EQ(plan.microbatches, j["best"][0]["layout"]["microbatches"].get<int>());
  EXPECT_TRUE(std::filesystem::is_regular_file(dir + "/best.profile.json"));
  std::filesystem::remove_all(dir);
}

// The profile beside the plan names each layer's role and the shape, so the Megatron
// export counts 8 decoder layers (not 10: the embedding and the head are layers of the
// profile, not of --num-layers) and carries the layout's t.
TEST(CliLlmPlan, OutExportsToMegatronWithTheModelsLayerCount) {
  const std::string dir = ::testing::TempDir() + "llm_plan_export";
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/best.json";
  const auto r = run_cli(kSmall + " --json --top 1 --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const int t = Json::parse(r.out)["best"][0]["layout"]["t"].get<int>();
  const auto e = run_cli("export --plan " + out + " --to megatron");
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("--num-layers 8"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("= tensor " + std::to_string(t) + " x pipeline"), std::string::npos) << e.out;  // t = 1: no flag
  std::ifstream in(dir + "/best.profile.json");
  const Json profile = Json::parse(in);
  EXPECT_EQ(profile["layers"][0]["spec"]["type"], "embedding");
  EXPECT_EQ(profile["layers"][1]["spec"]["type"], "transformer_block");
  EXPECT_EQ(profile["layers"][1]["spec"]["kv_heads"], 4);
  EXPECT_EQ(profile["layers"][1]["spec"]["swiglu"], true);
  EXPECT_EQ(profile["layers"][9]["spec"]["type"], "lm_head");
  EXPECT_EQ(profile["layers"][9]["spec"]["tied"], false);
  std::filesystem::remove_all(dir);
}

// The profile beside the plan states each layer's stash (activation_bytes and, for the
// split backward, weight_grad_bytes: llm/memory.h's), so `simulate` on a zb-v plan shows
// per rank the activation peak `llm-memory --plan` reports, within a byte per layer and
// chunk-micro-batch alive (the profile rounds each layer's bytes; at most 2p x 6 of them).
// The version 3 plan --out writes is simulated as its job (llm/job.h); its stages and
// profile are the profile world's view, simulated here from a v2 copy without the job.
TEST(CliLlmPlan, SimulateOnTheOutProfileShowsLlmMemorysActivations) {
  const std::string dir = ::testing::TempDir() + "llm_plan_memory";
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/best.json";
  const auto r = run_cli(kSmall + " --framework torch --schedule zb-v --json --top 1 --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  Json v2 = Json::parse(std::ifstream(out));
  v2.erase("job");
  v2["version"] = 2;
  std::ofstream(dir + "/best_v2.json") << v2.dump(1);
  const auto sim = run_cli("simulate --plan " + dir + "/best_v2.json --profile " + dir + "/best.profile.json --json");
  ASSERT_EQ(sim.code, 0) << sim.out;
  std::string model = kSmall;  // the model flags, without llm-plan's own
  model.replace(model.find("llm-plan --gpu h100-sxm"), 23, "llm-memory");
  model.replace(model.find(" --global-batch-size 64"), 23, "");
  // the model from the flags: the v2 copy (a version 3 plan's model is its job's, and a model
  // flag beside it is refused)
  const auto mem = run_cli(model + " --framework torch --plan " + dir + "/best_v2.json --json");
  ASSERT_EQ(mem.code, 0) << mem.out;
  const Json s = Json::parse(sim.out), m = Json::parse(mem.out);
  ASSERT_NE(m["layout"]["recompute"], "full");  // full adds the recomputed layer to llm-memory's count
  ASSERT_EQ(s["stages"].size(), m["stages"].size());
  for (std::size_t k = 0; k < m["stages"].size(); ++k) {
    const double want = m["stages"][k]["activation_bytes"].get<double>();
    EXPECT_GT(want, 0);
    EXPECT_NEAR(s["stages"][k]["peak_activation_bytes"].get<double>(), want, 2.0 * s["stages"].size() * 6) << k;
  }
  std::filesystem::remove_all(dir);
}

TEST(CliLlmPlan, BadInputExitsTwoNamingTheFlag) {
  const std::pair<std::string, std::string> cases[] = {
      {" --tensor-model-parallel-size 3", "--gpus: the pinned t * cp * p = 3 * 1 * 1 = 3 does not divide 16 GPUs"},
      {" --memory-gb 0.001", "--gpu: no layout fits 0.0 GB per GPU (0.0 GB less 2.0 GB headroom, --memory-headroom): "
                             "the smallest need found is"},
      {" --memory-headroom 90", "--memory-headroom: expected less than the 80.00 GB per GPU, got 90.00 GB"},
      {" --memory-headroom -1", "--memory-headroom: expected a number of GB >= 0, got -1.000000"},
      {" --memory-headroom nan", "--memory-headroom: expected a number of GB >= 0, got nan"},
      {" --framework jax", "--framework: expected megatron, torch or deepspeed, got \"jax\""},
      {" --order tp-dp-pp", "order: \"tp-dp-pp\""},
      {" --precision fp7", "--precision: expected bf16-mixed, fp32 or fp8-params"},
      {" --top 0", "--top: expected a positive integer, got 0"},
  };
  for (const auto& [flags, message] : cases) {
    const auto r = run_cli(kSmall + flags);
    EXPECT_EQ(r.code, 2) << flags << ": " << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << flags << ": " << r.out;
  }
  std::string other_gpu = kSmall, no_batch = kSmall;
  other_gpu.replace(other_gpu.find("h100-sxm"), 8, "nosuch");
  const auto gpu = run_cli(other_gpu);
  EXPECT_EQ(gpu.code, 2);
  EXPECT_NE(gpu.out.find("--gpu: \"nosuch\""), std::string::npos) << gpu.out;
  no_batch.replace(no_batch.find("--global-batch-size 64"), 22, "--global-batch-size 0");
  const auto batch = run_cli(no_batch);
  EXPECT_EQ(batch.code, 2);
  EXPECT_NE(batch.out.find("--global-batch-size: expected a positive integer, got 0"), std::string::npos) << batch.out;
  const auto missing = run_cli("llm-plan --gpu h100-sxm --gpus 8 --global-batch-size 8");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("--hf-config or --num-layers"), std::string::npos) << missing.out;
}

// --schedule pins the layout's pipeline schedule: under torch each of the seven it runs is
// searched, written into the --out plan (its kind and its layout's "schedule"), and
// `export --to torch` names the torch.distributed.pipelining class that runs it; a
// schedule the --framework does not run exits 2 naming both, an unknown name exits 2.
TEST(CliLlmPlan, SchedulePinReachesThePlanAndTheTorchExport) {
  const std::string dir = ::testing::TempDir() + "llm_plan_schedules";
  std::filesystem::create_directories(dir);
  const std::string cmd =
      "llm-plan --gpu h100-sxm --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --num-query-groups 4 "
      "--ffn-hidden-size 4096 --swiglu --disable-bias-linear --normalization RMSNorm "
      "--untie-embeddings-and-output-weights --vocab-size 32000 --seq-length 2048 --gpus 8 --global-batch-size 32 "
      "--pipeline-model-parallel-size 2 --framework torch --top 1 --json";
  const std::pair<const char*, const char*> classes[] = {
      {"gpipe", "ScheduleGPipe"},           {"1f1b", "Schedule1F1B"},
      {"interleaved", "ScheduleInterleaved1F1B"}, {"looped-bfs", "ScheduleLoopedBFS"},
      {"interleaved-zb", "ScheduleInterleavedZeroBubble"}, {"zb-v", "ScheduleZBVZeroBubble"},
      {"dualpipev", "ScheduleDualPipeV"}};
  for (const auto& [kind, torch_class] : classes) {
    const std::string out = dir + "/" + kind + ".json";
    const auto r = run_cli(cmd + " --schedule " + kind + " --out " + out);
    ASSERT_EQ(r.code, 0) << kind << ": " << r.out;
    const Json j = Json::parse(r.out);
    EXPECT_EQ(j["best"][0]["schedule"], kind);
    EXPECT_EQ(j["best"][0]["layout"]["schedule"], kind);
    const Plan plan = load_plan(out);
    EXPECT_EQ(to_string(plan.schedule), kind);
    EXPECT_EQ(to_string(*plan_layout(plan)->schedule), kind);
    const auto e = run_cli("export --plan " + out + " --to torch --json");
    ASSERT_EQ(e.code, 0) << kind << ": " << e.out;
    EXPECT_EQ(Json::parse(e.out)["schedule_class"], torch_class) << kind;
  }
  const auto megatron = run_cli(kSmall + " --schedule zb-v");
  EXPECT_EQ(megatron.code, 2);
  EXPECT_NE(megatron.out.find("--schedule: zb-v is not a schedule Megatron-LM runs (it runs 1f1b, interleaved)"),
            std::string::npos) << megatron.out;
  const auto deepspeed = run_cli(kSmall + " --framework deepspeed --schedule interleaved");
  EXPECT_EQ(deepspeed.code, 2);
  EXPECT_NE(deepspeed.out.find("--schedule: interleaved is not a schedule DeepSpeed runs (it runs 1f1b)"),
            std::string::npos) << deepspeed.out;
  const auto unknown = run_cli(kSmall + " --framework torch --schedule zbv");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.out.find("--schedule: unknown schedule \"zbv\""), std::string::npos) << unknown.out;
}

// `plan --framework` keeps the framework's schedules (llm/framework.h's table), and
// refuses one named in --schedules that the framework does not run.
TEST(CliPlanFramework, KeepsOnlyTheFrameworksSchedules) {
  const std::string plan = std::string("plan --profile ") + PIPESCOPE_SOURCE_DIR +
                           "/profiles/gpt-tiny-cpu.json -D 8 -N 32 --top 1000 --json --framework ";
  for (const std::string f : {"megatron", "torch", "deepspeed"}) {
    const auto r = run_cli(plan + f);
    ASSERT_EQ(r.code, 0) << f << ": " << r.out;
    const Json j = Json::parse(r.out);
    const FrameworkOffer& offer = framework_offer(*framework_from_name(f));
    ASSERT_GT(j["top"].size(), 0U);
    for (const Json& c : j["top"]) {
      EXPECT_TRUE(offer.runs(parse_schedule_kind(c["schedule"].get<std::string>()))) << f << ": " << c["schedule"];
    }
  }
  const auto refused = run_cli(plan + "megatron --schedules zb-h1,1f1b");
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.out.find("--schedules: zb-h1 is not a schedule Megatron-LM runs (it runs 1f1b, interleaved)"),
            std::string::npos) << refused.out;
  const auto bad = run_cli(plan + "jax");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--framework: expected megatron, torch or deepspeed"), std::string::npos) << bad.out;
}

// `plan --framework` on a bf16 profile counts the framework's mixed-precision Adam: 18
// bytes per parameter (2 weights + 4 gradients + 12 optimizer state, Megatron-LM's --bf16;
// llm/layout.h's recipe), i.e. 9 x the profile's 2-byte parameter bytes, written in the plan
// (optimizer.state_bytes_per_parameter_byte = 16 / 2 - 1 = 7) so that `simulate --plan`
// keeps it: each position's static bytes are 9 x its weight bytes, against 4 x without
// --framework (the planner's default 8 bytes per 2-byte weight).
TEST(CliPlanFramework, CountsTheFrameworksBytesPerParameter) {
  EXPECT_EQ(optimizer_state_factor(precision_of(PrecisionRecipe::Bf16Mixed)), 7.0);  // (4 + 12) / 2 - 1
  EXPECT_EQ(optimizer_state_factor(precision_of(PrecisionRecipe::Fp32)), 2.0);       // (4 + 8) / 4 - 1
  EXPECT_EQ(optimizer_state_factor(precision_of(PrecisionRecipe::Fp8Params)), 15.0); // (4 + 12) / 1 - 1
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "pipescope_plan_framework_bytes";
  std::filesystem::create_directories(dir);
  const std::string src = PIPESCOPE_SOURCE_DIR, hardware = src + "/profiles/gpus/h200.json";
  for (const auto& [framework, per_weight_byte] : {std::pair<std::string, int64_t>{"megatron", 9}, {"", 4}}) {
    const std::string out = (dir / ("plan-" + (framework.empty() ? std::string("none") : framework) + ".json")).string();
    const auto made = run_cli("plan --profile " + src + "/profiles/gpt-13b-h200.json --hardware " + hardware +
                              " -D 8 -N 64 --top 1 -o " + out + (framework.empty() ? "" : " --framework " + framework));
    ASSERT_EQ(made.code, 0) << made.out;
    const auto sim = run_cli("simulate --plan " + out + " --hardware " + hardware + " --json");
    ASSERT_EQ(sim.code, 0) << sim.out;
    const Json j = Json::parse(sim.out);
    for (const Json& st : j["stages"]) {
      EXPECT_EQ(st["static_bytes"].get<int64_t>(), per_weight_byte * st["weight_bytes"].get<int64_t>())
          << framework << ": " << st.dump();
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pipescope
