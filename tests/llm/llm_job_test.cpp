// One job, every front door: llm-plan's best layouts, written as version 3 plans (the file
// `llm-plan --out` writes, llm/job.h's job_plan) and read back (plan_job), evaluate to the
// identical step_ns and the identical bytes of each kind on every pipeline rank; llm-time's
// step (step_time on the picked layout) is llm-plan's to the nanosecond, ZeRO traffic
// included. The expected numbers are the search's own: the file must carry the job whole.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/plan.h"
#include "llm/job.h"
#include "llm/layout_search.h"
#include "tests/llm/llm_job_grid.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

using testing::GridJob;
using testing::gpu_file;
using testing::job_grid;
using testing::request_of;

// The plan file's text, parsed back as `simulate --plan` parses it.
Job reread(const Job& job, const GpuModel& gpu) {
  const std::string text = plan_to_json(job_plan(job, gpu, "job.profile.json").plan).dump(2);
  const Plan plan = plan_from_json(JsonReader::from_text(text, "job.json"));
  EXPECT_EQ(plan_to_json(plan).value("version", 0), 3);
  return *plan_job(plan);
}

TEST(LlmJob, EveryBestLayoutReReadFromItsPlanGivesTheSameStepAndBytes) {
  const std::vector<GridJob> grid = job_grid();
  ASSERT_GE(grid.size(), 30U);
  int layouts = 0, sharded = 0, schedules_seen = 0;
  std::set<std::string> schedules;
  for (const GridJob& g : grid) {
    SCOPED_TRACE(g.label);
    const GpuModel gpu = gpu_file(g.gpu);
    const LlmSearchResult r = search_layouts(request_of(g), gpu);
    ASSERT_FALSE(r.best.empty());
    for (const LlmCandidate& c : r.best) {
      Job job;
      job.shape = g.shape;
      job.shape.vocabulary = c.vocabulary;
      job.model_source = g.label;
      job.cluster = {g.gpu, gpu.gpus_per_node()};
      job.layout = c.layout;
      job.framework = g.framework;
      const Job back = reread(job, gpu);
      const JobReport rep = evaluate_job(back, gpu);
      EXPECT_EQ(rep.time.step_ns, c.step_ns) << layout_summary(c.layout);
      ASSERT_EQ(rep.memory.stages.size(), c.ranks.size());
      for (std::size_t k = 0; k < c.ranks.size(); ++k) {
        const RankMemory &a = rep.memory.stages[k], &b = c.ranks[k];
        EXPECT_EQ(a.parameter_bytes, b.parameter_bytes) << "rank " << k;
        EXPECT_EQ(a.gradient_bytes, b.gradient_bytes) << "rank " << k;
        EXPECT_EQ(a.optimizer_bytes, b.optimizer_bytes) << "rank " << k;
        EXPECT_EQ(a.activation_bytes, b.activation_bytes) << "rank " << k;
      }
      EXPECT_EQ(rep.memory.peak(), c.peak_bytes);
      EXPECT_EQ(back.model_source, g.label);
      EXPECT_EQ(back.framework, g.framework);
      // llm-time's step on the same layout: step_time with the layout's own overlap.
      EXPECT_EQ(step_time(job.shape, c.layout, gpu, step_options(c.layout)).step_ns, c.step_ns);
      ++layouts;
      if (c.layout.sharding == Sharding::Zero2 || c.layout.sharding == Sharding::Zero3) ++sharded;
      schedules.insert(c.schedule);
    }
  }
  schedules_seen = static_cast<int>(schedules.size());
  EXPECT_EQ(layouts, 99);        // 33 jobs x top 3: every search has at least three layouts that fit
  EXPECT_GT(sharded, 0);         // torch and DeepSpeed pick ZeRO-2 / 3 (61 of the 99 today): their traffic is in both
  EXPECT_EQ(schedules_seen, 7);  // every schedule llm/ times: 1f1b, interleaved and the five pinned torch ones
}

// ZeRO-3 on a link busier than the rank (tests/llm/llm_layout_search_test.cpp's case):
// llm-time's step is the four parts, the fourth the ZeRO traffic llm-plan counts (> 0).
TEST(LlmJob, StepTimeIncludesTheShardingTrafficItsPartsAddUp) {
  const GpuModel gpu = gpu_file("h100-sxm");
  TransformerShape shape = testing::llama3_8b();
  shape.layers = 8, shape.sequence = 256;
  ParallelLayout l;
  l.d = 64, l.micro_batch = 1, l.microbatches = 2, l.sharding = Sharding::Zero3;
  l.overlap_grad_reduce = l.overlap_param_gather = true;
  const StepTime st = step_time(shape, l, gpu, step_options(l));
  EXPECT_GT(st.sharding_ns, 0);
  EXPECT_EQ(st.step_ns, st.pipeline_ns + st.dp_exposed_ns + st.embedding_sync_ns + st.sharding_ns);
  EXPECT_EQ(time_layout(shape, l, gpu, step_options(l)).step_ns, st.step_ns);
}

// A hand-edited job names the file and the field; a version 2 plan cannot carry one.
TEST(LlmJob, BadJobsNameTheFileAndTheField) {
  const GpuModel gpu = gpu_file("h100-sxm");
  Job job;
  job.shape = testing::llama3_8b();
  job.shape.vocabulary = 128256;
  job.cluster = {"h100-sxm", 8};
  job.layout.t = 8, job.layout.microbatches = 4;
  Json plan = plan_to_json(job_plan(job, gpu, "p.profile.json").plan);
  auto refusal = [&](const std::function<void(Json&)>& edit) {
    Json j = plan;
    edit(j);
    try {
      const Plan p = plan_from_json(JsonReader::from_text(j.dump(), "j.json"));
      plan_job(p);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal([](Json& j) { j["job"]["framework"] = "jax"; }),
            "j.json: job.framework: expected megatron, torch or deepspeed, got \"jax\"");
  EXPECT_EQ(refusal([](Json& j) { j["version"] = 2; }),
            "j.json: job: needs \"version\": 3 (plans before version 3 have no job)");
  EXPECT_EQ(refusal([](Json& j) { j.erase("layout"); }), "j.json: job: needs the plan's \"layout\" beside it");
  const std::string zero = refusal([](Json& j) { j["job"]["cluster"]["gpus_per_node"] = 0; });
  EXPECT_EQ(zero.rfind("j.json: job.cluster.gpus_per_node:", 0), 0U) << zero;
  // The vocabulary before padding must pad (to 128 x t 8 = 1024) to the shape's: 128256 -> 129024.
  EXPECT_EQ(refusal([](Json& j) { j["job"]["model"]["vocab_size"] = 128256; }),
            "j.json: job.model.vocab_size: padded to a multiple of make_vocab_size_divisible_by 128 x t 8 it is "
            "129024, not the shape's vocabulary 128256");
  EXPECT_EQ(refusal([](Json& j) {
              j["job"]["model"]["vocab_size"] = 128256;
              j["job"]["model"]["make_vocab_size_divisible_by"] = 1;
            }),
            "accepted");
  // The cluster part of validate_job, given the GPU file: h100-sxm has 8 per node and 80 GB.
  auto cluster_refusal = [&](Job other) {
    try {
      validate_job(other, other.layout.gpus(), nullptr, &gpu);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  Job other = job;
  other.cluster.gpus_per_node = 4;
  EXPECT_EQ(cluster_refusal(other),
            "job.cluster.gpus_per_node: the job was planned with 4 GPUs per node, but h100-sxm now says 8");
  // issue 56: a headroom at or above the GPU's memory printed "-920.00 GB usable"
  other = job;
  other.cluster.memory_headroom_bytes = 1000e9;
  EXPECT_EQ(cluster_refusal(other), "--memory-headroom: expected less than the 80.00 GB per GPU, got 1000.00 GB");
  other.cluster.memory_headroom_bytes = 80e9;  // all of it: nothing left
  EXPECT_EQ(cluster_refusal(other), "--memory-headroom: expected less than the 80.00 GB per GPU, got 80.00 GB");
  other.cluster.memory_headroom_bytes = 79e9;
  EXPECT_EQ(cluster_refusal(other), "accepted");
  // in a plan file the refusal names the job's field
  EXPECT_EQ(refusal([](Json& j) { j["job"]["cluster"]["memory_headroom_bytes"] = 1000e9; }),
            "j.json: job.cluster.memory_headroom_bytes: --memory-headroom: expected less than the 80.00 GB per GPU, "
            "got 1000.00 GB");
}

}  // namespace
}  // namespace pipescope
