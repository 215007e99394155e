// Different replication per stage: a model whose last layer costs 10x each of the others
// cannot be balanced by cutting (the layer is one piece), only by giving its stage more
// replicas. On 8 devices with K = 4 positions, r = 2 each leaves that stage at 10 / 2 = 5 units against 0.5 for the rest;
// r = (1, 1, 1, 5) brings it to 2: the search must find a per-stage replication,
// simulate it to its step time, and beat every uniform plan.
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "interop/synth_profile.h"
#include "planner/search.h"
#include "planner/stage_replication.h"
#include "sim/simulator.h"

namespace pipescope {
namespace {

SearchRequest heavy_last_layer(bool per_stage) {
  SearchRequest q;
  UniformSpec u;
  u.layers = 4;
  u.heavy_every = 4;  // layer 3
  u.heavy_factor = 10.0;
  // 256 MiB of parameters a layer, 2.5 GiB the heavy one (x 4 with gradients and optimizer
  // state) on 12 GiB devices: the whole model (13 GiB) does not fit one device, so the plan
  // must pipeline; a link fast enough to make the all-reduce negligible.
  u.parameter_bytes = int64_t{256} << 20;
  q.profile = make_uniform_profile(u);
  q.profile_path = "heavy.json";
  q.hardware.name = "8 devices";
  q.hardware.devices = 8;
  q.hardware.memory_bytes = int64_t{12} << 30;
  q.hardware.link = {1e6, 0.0};
  q.devices = 8;
  q.batch = 40;  // 40 / M samples per micro-batch: divisible by 5 when M = 8
  q.threads = 1;
  q.schedules = {ScheduleKind::OneFOneB};
  q.max_stages = 4;
  q.per_stage_replication = per_stage;
  return q;
}

TEST(StageReplication, AllocatorGivesTheHeavyStageTheSpareDevices) {
  const SearchRequest q = heavy_last_layer(true);
  const Schedule schedule = make_schedule({ScheduleKind::OneFOneB, 4, 8, 1, false});
  StageModelSpec spec;
  spec.microbatch_size = 5;
  spec.replicas = 2;
  const StageReplication r = replicate_per_stage(q.profile, q.hardware, schedule, spec, 8, 5,
                                                 {{0, 1}, {1, 2}, {2, 3}, {3, 4}});
  EXPECT_EQ(r.replicas, (std::vector<int>{1, 1, 1, 5}));
}

TEST(StageReplication, NeverSlowerThanUniformAndFasterWhereTheHeavyStageGainsReplicas) {
  const SearchRequest q = heavy_last_layer(true);
  const SearchResult varied = search_plans(q);
  const SearchResult uniform = search_plans(heavy_last_layer(false));
  ASSERT_EQ(varied.candidates.size(), uniform.candidates.size());
  int faster = 0;
  for (std::size_t i = 0; i < varied.candidates.size(); ++i) {
    const Candidate& v = varied.candidates[i];
    const Candidate& u = uniform.candidates[i];
    if (u.fits) {
      EXPECT_TRUE(v.fits) << v.label();
      EXPECT_LE(v.step_ns, u.step_ns) << v.label();
    }
    if (v.stage_replicas.empty()) continue;
    ++faster;
    int sum = 0;
    for (int r : v.stage_replicas) sum += r;
    EXPECT_LE(sum, q.devices) << v.label();
    EXPECT_LT(v.step_ns, u.step_ns) << v.label();
    const StepReport again = simulate(make_schedule(v.plan.schedule_spec()), build_cost_model(q.profile, v.plan, q.hardware),
                                      q.hardware, {.record_timeline = false, .model = ""});
    EXPECT_EQ(again.step_ns, v.step_ns) << v.label();
  }
  EXPECT_GT(faster, 0);
  // K = 4, M = 4 (10 samples a micro-batch, so r in {1, 2, 5}): the heavy stage takes 5.
  for (const Candidate& v : varied.candidates) {
    if (v.stages == 4 && v.microbatches == 4 && v.recompute == Recompute::None) {
      EXPECT_EQ(v.label(), "1f1b K=4 r=1,1,1,5 M=4");
      std::printf("%s: %.3f ms, uniform r = 2: %.3f ms\n", v.label().c_str(), static_cast<double>(v.step_ns) / 1e6,
                  static_cast<double>(uniform.candidates[static_cast<std::size_t>(v.index)].step_ns) / 1e6);
    }
  }
}

}  // namespace
}  // namespace pipescope
