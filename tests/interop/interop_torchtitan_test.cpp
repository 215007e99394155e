// `plan --hf-config ... --framework torch -o` -> `export --to torchtitan` through the pipescope
// command: the exact words torchtitan 0.3.0 reads for a pinned Llama-3-8B layout (its
// config, stage lists, schedule, batch arithmetic, degrees), the stage lists of an uneven
// split, the prediction in the header equal to `simulate --plan`'s, and every refusal
// (exit 2) naming its field. torchtitan's own code reads these exports back in
// python/tests/test_oracle_torchtitan.py.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/source_paths.h"

// A namespace of its own: the unity build compiles this file with interop_cli_test.cpp,
// whose file-local run() and src() have these names.
namespace titan_test {

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string out;
};

Result run(const std::string& args) {
  FILE* pipe = popen((std::string(PIPESCOPE_BINARY) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string src(const std::string& rel) { return std::string(PIPESCOPE_SOURCE_DIR) + "/" + rel; }

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("pipescope_titan_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// A version 3 plan of profiles/hf/<model>.json at sequence 4096 on H100s, written to d/plan.json.
std::string plan(const fs::path& d, const std::string& model, const std::string& flags) {
  const std::string out = (d / "plan.json").string();
  const Result r = run("plan --hf-config " + src("profiles/hf/" + model + ".json") +
                       " --gpu h100-sxm --seq-length 4096 --top 1 " + flags + " -o " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  return out;
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(std::ifstream(path)); }

// The stage lists torchtitan's --parallelism.module_fqns_per_model_part takes for stages of
// `decoders` decoder layers each: tok_embeddings on the first, norm and lm_head on the last.
std::string fqn_words(const std::vector<int>& decoders) {
  std::string out;
  int layer = 0;
  for (std::size_t s = 0; s < decoders.size(); ++s) {
    std::string stage = s == 0 ? "tok_embeddings" : "";
    for (int i = 0; i < decoders[s]; ++i) {
      if (!stage.empty()) stage += ',';
      stage += "layers.";
      stage += std::to_string(layer++);
    }
    if (s + 1 == decoders.size()) stage += ",norm,lm_head";
    if (s) out += ' ';
    out += stage;
  }
  return out;
}

// Llama-3-8B on 16 GPUs with every searched dimension but sharding and recompute pinned:
// p 4, v 2 (zb-v), t 1, cp 2, so d = 16 / (4 x 2) = 2; b 2, global batch 128, so M = 128 /
// (2 x 2) = 32.
const char* kZbv8b =
    "--framework torch --gpus 16 --global-batch-size 128 --pipeline-model-parallel-size 4 --virtual-pipeline-size 2 "
    "--schedule zb-v --tensor-model-parallel-size 1 --context-parallel-size 2 --micro-batch-size 2";

}  // namespace

TEST(ExportTorchtitan, ZbvPlanIsTheLaunchTorchtitanReads) {
  const fs::path d = temp_dir("zbv");
  const std::string p = plan(d, "llama-3-8b", kZbv8b);
  const nlohmann::json layout = read_json(p)["layout"];
  const Result r = run("export --plan " + p + " --to torchtitan");
  ASSERT_EQ(r.code, 0) << r.out;
  // 16 GPUs on nodes of 8 (h100-sxm's file): 2 nodes of 8 processes.
  EXPECT_NE(r.out.find("torchrun --nnodes 2 --nproc_per_node 8 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  -m torchtitan.train \\\n  --module llama3 \\\n  --config llama3_8b \\\n"), std::string::npos);
  EXPECT_NE(r.out.find("  --training.seq_len 4096 \\\n"), std::string::npos);
  // b M = 2 x 32 = 64 per data-parallel rank, x d 2 = the step's 128 (no accumulation).
  EXPECT_NE(r.out.find("  --training.local_batch_size 64 \\\n  --training.global_batch_size 128 \\\n"), std::string::npos);
  EXPECT_NE(r.out.find("  --parallelism.tensor_parallel_degree 1 \\\n  --parallelism.no_enable_sequence_parallel \\\n"
                       "  --parallelism.context_parallel_degree 2 \\\n  --parallelism.pipeline_parallel_degree 4 \\\n"),
            std::string::npos)
      << r.out;
  // 8 stages of the plan's split (even, 32 / 8 = 4 decoder layers, unless the plan balanced the
  // head's stage); the lists come before the next flag, never last.
  const std::vector<int> split =
      layout.contains("layers_per_chunk") ? layout["layers_per_chunk"].get<std::vector<int>>() : std::vector<int>(8, 4);
  EXPECT_NE(r.out.find("  --parallelism.module_fqns_per_model_part " + fqn_words(split) +
                       " \\\n  --parallelism.pipeline_parallel_schedule ZBVZeroBubble \\\n"
                       "  --parallelism.pipeline_parallel_microbatch_size 2 \\\n  --training.disable_cuda_graphs \\\n"),
            std::string::npos)
      << r.out;
  const std::string sharding = layout["sharding"];
  ASSERT_TRUE(sharding == "zero-2" || sharding == "zero-3") << "the planner's torch offer with cp 2: " << sharding;
  EXPECT_NE(r.out.find("  --parallelism.data_parallel_replicate_degree 1 \\\n  --parallelism.data_parallel_shard_degree 2 "
                       "\\\n  --parallelism.fsdp_reshard_after_forward " +
                       std::string(sharding == "zero-2" ? "never" : "always")),
            std::string::npos);
  const std::string ac = layout["recompute"] == "full" ? "full" : "none";
  EXPECT_EQ(r.out.substr(r.out.size() - ac.size() - 25), "  activation_checkpoint:" + ac + "\n");

  // The header is what `simulate --plan` predicts for the same job, to the nanosecond.
  const Result sim = run("simulate --plan " + p + " --json");
  ASSERT_EQ(sim.code, 0) << sim.out;
  const Result js = run("export --plan " + p + " --to torchtitan --json");
  ASSERT_EQ(js.code, 0) << js.out;
  const nlohmann::json e = nlohmann::json::parse(js.out);
  EXPECT_EQ(e["predicted"]["step_ns"], nlohmann::json::parse(sim.out)["step_ns"]);
  char step[64];
  std::snprintf(step, sizeof step, "step %.3f s", e["predicted"]["step_ns"].get<double>() * 1e-9);
  EXPECT_NE(r.out.find(std::string("# pipescope predicts (llama-3-8b-shaped, 16 GPUs on h100-sxm): ") + step),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("#   rank 3: "), std::string::npos);
  EXPECT_EQ(e["pipeline_parallel_schedule"], "ZBVZeroBubble");
  EXPECT_EQ(e["stage_ranks"], nlohmann::json({0, 1, 2, 3, 3, 2, 1, 0}));  // the V: stages d and 7 - d on rank d
  EXPECT_EQ(e["module_fqns_per_model_part"].size(), 8U);
}

TEST(ExportTorchtitan, UnevenSplitNamesEachStagesLayers) {
  // 32 decoder layers over p 3: the planner's layers_per_chunk (32 = 11 + 11 + 10 or
  // another order), each stage's list exactly those layers.
  const fs::path d = temp_dir("uneven");
  const std::string p = plan(d, "llama-3-8b", "--framework torch --gpus 24 --global-batch-size 96 "
                                              "--pipeline-model-parallel-size 3 --virtual-pipeline-size 1");
  const std::vector<int> chunks = read_json(p)["layout"]["layers_per_chunk"].get<std::vector<int>>();
  ASSERT_EQ(chunks.size(), 3U);
  EXPECT_EQ(chunks[0] + chunks[1] + chunks[2], 32);
  EXPECT_NE(chunks[0], chunks[2]);  // uneven
  const Result r = run("export --plan " + p + " --to torchtitan");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--parallelism.module_fqns_per_model_part " + fqn_words(chunks) + " \\\n"), std::string::npos)
      << r.out;
}

TEST(ExportTorchtitan, CsvScheduleIsWrittenBesideTheCommand) {
  // --torch-csv: pipescope's own op order, one row per rank, in a here-document, loaded by
  // _PipelineScheduleRuntime under the name PipelineScheduleMulti (loop placement: v 1).
  const fs::path d = temp_dir("csv");
  const std::string p = plan(d, "llama-3-8b", "--framework torch --gpus 8 --global-batch-size 32 "
                                              "--pipeline-model-parallel-size 2 --schedule 1f1b --micro-batch-size 1");
  const Result r = run("export --plan " + p + " --to torchtitan --torch-csv");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("cat > pipescope_schedule.csv <<'CSV'\n0F0,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--parallelism.pipeline_parallel_schedule PipelineScheduleMulti \\\n"
                       "  --parallelism.pipeline_parallel_schedule_csv pipescope_schedule.csv \\\n"),
            std::string::npos)
      << r.out;
}

TEST(ExportTorchtitan, RefusesWhatTorchtitanRunsOtherwise) {
  const fs::path d = temp_dir("refuse");
  auto refusal = [&](const std::string& plan_path) {
    const Result r = run("export --plan " + plan_path + " --to torchtitan");
    EXPECT_EQ(r.code, 2) << r.out;
    return r.out;
  };
  const std::string torch16 = "--framework torch --gpus 16 --global-batch-size 64 --pipeline-model-parallel-size 2";
  // Models torchtitan's llama3 cannot build (its model is not a command-line setting).
  EXPECT_NE(refusal(plan(d, "qwen2-7b", torch16)).find("job.model.shape.qkv_bias: true (q, k and v carry biases, as Qwen2's do)"),
            std::string::npos);
  EXPECT_NE(refusal(plan(d, "mixtral-8x7b", "--framework torch --gpus 64 --global-batch-size 256 "
                                            "--pipeline-model-parallel-size 2")).find("job.model.shape.experts: 8 experts"), std::string::npos);
  EXPECT_NE(refusal(plan(d, "mistral-7b", torch16))
                .find("job.model.shape.vocabulary: 32000, but torchtitan's llama3_8b (the llama3 config of hidden size "
                      "4096) has 128256"),
            std::string::npos);
  // A plan searched for Megatron-LM: its prediction is not torchtitan's.
  EXPECT_NE(refusal(plan(d, "llama-3-8b", "--gpus 16 --global-batch-size 64 --pipeline-model-parallel-size 2"))
                .find("job.framework: \"megatron\""),
            std::string::npos);
  // Layouts torchtitan runs otherwise: no DDP over context-parallel ranks (FSDP2 shards over
  // dp_shard x cp; torch's offer refuses it, so the plan's job does not read), no
  // pp-inside-dp rank order.
  const std::string p = plan(d, "llama-3-8b", kZbv8b);
  nlohmann::json edited = read_json(p);
  edited["layout"]["sharding"] = "none";
  std::ofstream(d / "none.json") << edited.dump();
  EXPECT_NE(refusal((d / "none.json").string())
                .find("--sharding: none with --context-parallel-size 2: torchtitan shards the weights over the "
                      "context-parallel ranks"),
            std::string::npos);
  edited = read_json(p);
  edited["layout"]["order"] = "tp-cp-ep-pp-dp";
  std::ofstream(d / "order.json") << edited.dump();
  EXPECT_NE(refusal((d / "order.json").string()).find("layout.order: \"tp-cp-ep-pp-dp\""), std::string::npos);
  // A V-shaped plan as a CSV: torchtitan places a CSV's stages in a loop (PipelineScheduleMulti),
  // stage 4 of 8 on rank 4 % 4 = 0, the V on rank 3.
  const Result v_csv = run("export --plan " + p + " --to torchtitan --torch-csv");
  EXPECT_EQ(v_csv.code, 2);
  EXPECT_NE(v_csv.out.find("stages[4].devices: schedule zb-v as a CSV (--torch-csv) runs under torchtitan's looped stage "
                           "placement (stage s on rank s % p = 0), the plan places it on rank 3"),
            std::string::npos)
      << v_csv.out;
  // A plan without a job (version 1): no model to name.
  ASSERT_EQ(run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu h200 -o " +
                (d / "prof.json").string()).code,
            0);
  std::ofstream(d / "v1.json") << R"({"format": "pipescope.plan", "version": 1, "profile": "prof.json",
      "batch_size": 16, "microbatches": 8, "schedule": {"kind": "1f1b", "chunks": 1}, "recompute": false,
      "stages": [{"layers": [0, 17], "devices": [0]}, {"layers": [17, 34], "devices": [1]}]})";
  EXPECT_NE(refusal((d / "v1.json").string()).find("job: torchtitan's --config names the model"), std::string::npos);
  // An unknown target names the ones there are.
  const Result bad = run("export --plan " + p + " --to jax");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--to: expected one of megatron, torch, deepspeed, torchtitan, got \"jax\""), std::string::npos)
      << bad.out;
}

}  // namespace titan_test
