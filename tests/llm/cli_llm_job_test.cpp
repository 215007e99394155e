// Issue #37's job through every front door of the binary: Llama-3-70B
// (profiles/hf/llama-3-70b.json), 64 H100s (8 per node), 512 sequences of 4096. The plan
// `llm-plan --out` writes is simulated alone (`simulate --plan`, no other flag) and gives
// llm-plan's step_ns and per-rank bytes by kind; `export --to megatron` of it writes the
// memory-relevant flags, which llm-memory and llm-time read back to llm-plan's peak and
// step. The expected numbers are llm-plan's own (the other front door they must equal);
// today the Megatron winner is t 4 sp cp 4 p 4 v 5 b 2 M 256, distributed optimizer, with
// Megatron's default overlapped p2p: 33.038 s, 68.69 GB (docs/llm-scale.md).
#include <algorithm>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/json_reader.h"
#include "tests/support/cli_run.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

using testing::run_cli;

// The model; the export writes --seq-length 4096 itself.
const std::string kHf = "--hf-config " + std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/hf/llama-3-70b.json";
const std::string kJob = "llm-plan --gpu h100-sxm --gpus 64 --global-batch-size 512 --seq-length 4096 " + kHf;

struct Planned {
  Json best;      // llm-plan --json's best[0]
  std::string plan;  // its --out
};

// run_cli merges stderr into the output: a search that runs past a second (under the
// sanitizers) prints its progress line there first. The JSON object starts at the first '{'.
Json json_of(const std::string& out) { return Json::parse(out.substr(std::min(out.find('{'), out.size()))); }

Planned plan(const std::string& flags, const std::string& name) {
  const std::string dir = ::testing::TempDir() + "llm_job_" + name;
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/plan.json";
  const auto r = run_cli(kJob + " " + flags + " --top 1 --json --out " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  return {json_of(r.out)["best"][0], out};
}

Json run_json(const std::string& args) {
  const auto r = run_cli(args + " --json");
  EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  return json_of(r.out);
}

// The export's flags on one line (comments dropped).
std::string megatron_flags(const std::string& plan_path) {
  const auto r = run_cli("export --plan " + plan_path + " --to megatron");
  EXPECT_EQ(r.code, 0) << r.out;
  std::string flags;
  std::size_t start = 0;
  while (start < r.out.size()) {
    std::size_t end = r.out.find('\n', start);
    if (end == std::string::npos) end = r.out.size();
    std::string line = r.out.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    while (!line.empty() && (line.back() == '\\' || line.back() == ' ')) line.pop_back();
    flags += " " + line;
  }
  return flags;
}

void expect_same_ranks(const Json& got, const Json& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    for (const char* kind : {"parameter_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes"}) {
      EXPECT_EQ(got[k][kind], want[k][kind]) << "rank " << k << " " << kind;
    }
  }
}

TEST(CliLlmJob, MegatronPlanSimulatesExportsAndReadsBackToLlmPlansNumbers) {
  const Planned p = plan("--framework megatron", "megatron");
  const Json sim = run_json("simulate --plan " + p.plan);
  EXPECT_EQ(sim["format"], "pipescope.job_prediction");
  EXPECT_EQ(sim["step_ns"], p.best["step_ns"]);
  expect_same_ranks(sim["ranks"], p.best["ranks"]);
  EXPECT_EQ(sim["peak_bytes"], p.best["peak_bytes"]);

  const std::string flags = megatron_flags(p.plan);
  if (p.best["layout"]["sharding"] != "none") {
    EXPECT_NE(flags.find("--use-distributed-optimizer"), std::string::npos) << flags;
  }
  const Json mem = run_json("llm-memory " + kHf + " --gpus 64" + flags);
  EXPECT_EQ(mem["peak_bytes"], p.best["peak_bytes"]);
  expect_same_ranks(mem["stages"], p.best["ranks"]);
  const Json time = run_json("llm-time --gpu h100-sxm " + kHf + " --gpus 64" + flags);
  EXPECT_EQ(time["step_ns"], p.best["step_ns"]);
}

// 26 GB per GPU leaves full recompute the winner (t 8 sp p 8 v 5, 22.6 GB with fused
// attention; at 30 GB no recompute fits): the export writes Megatron's full-recompute flags
// (granularity, uniform method, 1 layer), which read back to the planned peak.
TEST(CliLlmJob, RecomputeIsExportedAndReadsBackToThePlannedPeak) {
  const Planned p = plan("--framework megatron --memory-gb 26", "recompute");
  ASSERT_EQ(p.best["layout"]["recompute"], "full");
  const std::string flags = megatron_flags(p.plan);
  EXPECT_NE(flags.find("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"),
            std::string::npos) << flags;
  const Json mem = run_json("llm-memory " + kHf + " --gpus 64" + flags);
  EXPECT_EQ(mem["peak_bytes"], p.best["peak_bytes"]);
  const Json sim = run_json("simulate --plan " + p.plan);
  EXPECT_EQ(sim["step_ns"], p.best["step_ns"]);
}

// The torch winner (ZeRO-2 or -3 with zb-v today, 73.9 GB): simulate --plan counts its
// sharded bytes as llm-plan does, so --require-fit passes (issue #37: 104.9 GiB, exit 4).
TEST(CliLlmJob, TorchPlanFitsThroughSimulateAsItFitInTheSearch) {
  const Planned p = plan("--framework torch", "torch");
  const Json sim = run_json("simulate --require-fit --plan " + p.plan);
  EXPECT_EQ(sim["step_ns"], p.best["step_ns"]);
  expect_same_ranks(sim["ranks"], p.best["ranks"]);
  ASSERT_EQ(sim["gates"].size(), 1U);
  EXPECT_EQ(sim["gates"][0]["passed"], true);
  // llm-memory --plan with no model flag takes the whole job, framework included.
  const Json mem = run_json("llm-memory --plan " + p.plan);
  EXPECT_EQ(mem["framework"], "torch");
  EXPECT_EQ(mem["peak_bytes"], p.best["peak_bytes"]);
  expect_same_ranks(mem["stages"], p.best["ranks"]);
}

// A flag beside a plan that holds its whole job contradicts it: exit 2, naming both.
TEST(CliLlmJob, FlagsBesideAJobPlanNameTheFlagAndTheFile) {
  const Planned p = plan("--framework megatron", "flags");
  const auto r = run_cli("simulate --plan " + p.plan + " --microbatches 8");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--microbatches: " + p.plan + " holds the whole job"), std::string::npos) << r.out;
}


// Issue #38: the export of a job planned from an HF config is the whole job in Megatron-LM's
// words. Its flags alone (no --hf-config) read back to the planned peak and step, and the
// header states pipescope's prediction: the step of llm-plan's best, each rank's peak.
TEST(CliLlmJob, MegatronExportAloneIsTheJobAndStatesThePrediction) {
  const Planned p = plan("--framework megatron", "export_alone");
  const std::string flags = megatron_flags(p.plan);
  // The model as Megatron-Bridge's conversion of profiles/hf/llama-3-70b.json sets it:
  // GQA 8, SwiGLU 28672, RMSNorm 1e-5, RoPE base 500000, no biases, untied, V 128256.
  EXPECT_NE(flags.find(" --num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64 "
                       "--group-query-attention --num-query-groups 8 --seq-length 4096 --max-position-embeddings 8192 "
                       "--position-embedding-type rope --normalization RMSNorm --swiglu --disable-bias-linear "
                       "--untie-embeddings-and-output-weights --vocab-size 128256 --make-vocab-size-divisible-by 128 "
                       "--rotary-base 500000 --norm-epsilon 1e-05 "),
            std::string::npos) << flags;
  // Megatron's interleaved default (overlapped p2p) is what was predicted: left as it is.
  EXPECT_EQ(flags.find("--no-overlap-p2p-communication"), std::string::npos) << flags;
  const Json mem = run_json("llm-memory --gpus 64" + flags);
  EXPECT_EQ(mem["peak_bytes"], p.best["peak_bytes"]);
  expect_same_ranks(mem["stages"], p.best["ranks"]);
  const Json time = run_json("llm-time --gpu h100-sxm --gpus 64" + flags);
  EXPECT_EQ(time["step_ns"], p.best["step_ns"]);

  const Json exported = run_json("export --plan " + p.plan + " --to megatron");
  EXPECT_EQ(exported["predicted"]["step_ns"], p.best["step_ns"]);
  EXPECT_EQ(exported["predicted"]["gpus"], 64);
  ASSERT_EQ(exported["predicted"]["ranks"].size(), p.best["ranks"].size());
  for (std::size_t k = 0; k < p.best["ranks"].size(); ++k) {
    EXPECT_EQ(exported["predicted"]["ranks"][k]["total_bytes"], p.best["ranks"][k]["total_bytes"]) << k;
  }
  const auto text = run_cli("export --plan " + p.plan + " --to megatron");
  char step[64];
  std::snprintf(step, sizeof step, "step %.3f s", p.best["step_ns"].get<double>() * 1e-9);
  EXPECT_NE(text.out.find("# pipescope predicts (llama-3-70b-shaped, 64 GPUs on h100-sxm): " + std::string(step)),
            std::string::npos) << text.out;
  char rank0[64];
  std::snprintf(rank0, sizeof rank0, "#   rank 0: %.2f GB = ", p.best["ranks"][0]["total_bytes"].get<double>() / 1e9);
  EXPECT_NE(text.out.find(rank0), std::string::npos) << text.out;
}

// Planned with blocking p2p on the interleaved schedule, the job is timed as Megatron-LM
// runs under --no-overlap-p2p-communication, and the export says so: its flags read back to
// the same step (v 4 pinned: 31.273 s blocking, t 8 p 2, against 30.956 s overlapped, t 4 p 4).
TEST(CliLlmJob, BlockingP2pIsPlannedExportedAndReadBack) {
  const Planned p = plan("--framework megatron --no-overlap-p2p-communication --virtual-pipeline-size 4", "blocking");
  EXPECT_EQ(p.best["layout"]["overlap_p2p"], false);
  EXPECT_EQ(p.best["step_ns"], 31272527352) << p.best;
  const std::string flags = megatron_flags(p.plan);
  EXPECT_NE(flags.find(" --no-overlap-p2p-communication"), std::string::npos) << flags;
  EXPECT_EQ(run_json("llm-time --gpu h100-sxm --gpus 64" + flags)["step_ns"], p.best["step_ns"]);
  EXPECT_EQ(run_json("simulate --plan " + p.plan)["step_ns"], p.best["step_ns"]);
}

// A model Megatron's flags cannot build as planned is refused at export, naming the field:
// Llama's attention_bias puts a bias on the output projection, which Megatron has no flag
// for without biasing the MLP too; a RoPE scaling other than Llama 3.1's.
TEST(CliLlmJob, MegatronExportRefusesAModelItsFlagsCannotBuild) {
  const std::string dir = ::testing::TempDir() + "llm_job_refused";
  std::filesystem::create_directories(dir);
  const std::string source = std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/hf/llama-3-8b.json";
  Json hf = Json::parse(std::ifstream(source));
  struct Case {
    const char* name;
    Json change;
    std::string message;
  };
  const Case cases[] = {
      {"attention_bias", {{"attention_bias", true}}, "job.model.shape.output_bias: Megatron-LM biases every linear"},
      {"yarn", {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}},
       "rope_scaling: \"yarn\": Megatron-LM's flags scale RoPE as Llama 3.1 does"},
  };
  for (const Case& c : cases) {
    Json changed = hf;
    changed.update(c.change);
    const std::string config = dir + "/" + c.name + ".json", out = dir + "/" + c.name + "-plan.json";
    std::ofstream(config) << changed.dump();
    const auto planned = run_cli("llm-plan --gpu h100-sxm --gpus 8 --global-batch-size 64 --seq-length 4096 --hf-config " +
                                 config + " --top 1 --out " + out);
    ASSERT_EQ(planned.code, 0) << planned.out;
    testing::expect_refused("export --plan " + out + " --to megatron", c.message);
  }
  std::filesystem::remove_all(dir);
}

// The flags pipescope reads only so that an export reads back are still checked: exit 2,
// naming the flag.
TEST(CliLlmJob, MegatronNumericsFlagsAreChecked) {
  const std::string job = "llm-memory --gpus 8 --global-batch-size 64 --seq-length 4096 " + kHf;
  testing::expect_refused(job + " --rope-scaling-factor 8", "--rope-scaling-factor: given without --use-rope-scaling");
  testing::expect_refused(job + " --moe-token-dispatcher-type allgather",
                          "--moe-token-dispatcher-type: pipescope times the all-to-all dispatcher (alltoall), got \"allgather\"");
  testing::expect_refused(job + " --position-embedding-type alibi",
                          "--position-embedding-type: expected rope or learned_absolute, got \"alibi\"");
  testing::expect_refused(job + " --max-position-embeddings 1024",
                          "--max-position-embeddings: 1024 is shorter than --seq-length 4096");
  testing::expect_refused(job + " --rotary-base nan", "--rotary-base: expected a positive number");
}

}  // namespace
}  // namespace pipescope
