// with_measured_op_times (sim/replay.h), the replay behind `run --compare`'s "replayed" row.
// Oracles: a prediction replayed through its own timeline is itself, to the nanosecond
// (every op of a kind on a stage has the same duration, so the means are exact), for
// random plans over the four schedules; and a hand-made timeline gives the means one
// computes by hand.
#include <gtest/gtest.h>

#include <random>

#include "core/cost_model.h"
#include "planner/plan_builder.h"
#include "sim/replay.h"
#include "sim/simulator.h"

namespace pipescope {
namespace {

TEST(ExecReplay, ReplayingAPredictionReproducesItExactly) {
  for (uint64_t seed = 1; seed <= 80; ++seed) {
    std::mt19937_64 rng(seed);
    Profile p;
    p.model = "random";
    p.batch_sizes = {1, 4};
    const int L = 4 + rng() % 16;
    for (int l = 0; l < L; ++l) {
      LayerProfile layer;
      layer.name = "l";
      layer.name += std::to_string(l);
      const double f = 0.01 + (rng() % 1000) / 100.0, b = 0.01 + (rng() % 2000) / 100.0;
      layer.forward_ms = {f, 3.7 * f};
      layer.backward_ms = {b, 3.9 * b};
      layer.activation_bytes = {1000.0, 4000.0};
      layer.output_bytes = {100.0, 400.0};
      layer.parameter_bytes = 1000;
      p.layers.push_back(layer);
    }
    PlanChoice choice;
    choice.stages = 1 + rng() % std::min(L / 2, 4);
    const ScheduleKind kinds[] = {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
                                  ScheduleKind::ZeroBubbleH1};
    choice.schedule = kinds[rng() % 4];
    choice.chunks = choice.schedule == ScheduleKind::Interleaved ? 2 : 1;
    choice.microbatches = choice.schedule == ScheduleKind::Interleaved ? choice.stages * (1 + rng() % 3)
                                                                        : 1 + rng() % 9;
    choice.recompute = rng() % 2;
    Plan plan = make_plan(p, choice);
    Hardware h = Hardware::ideal(choice.stages);
    h.link = {0.0, static_cast<double>(rng() % 50)};  // random latency (us)
    const CostModel costs = build_cost_model(p, plan, h);
    const Schedule s = make_schedule(plan.schedule_spec());
    const StepReport predicted = simulate(s, costs, h, {});
    const StepReport replayed = simulate(s, with_measured_op_times(costs, predicted.timeline), h, {});
    EXPECT_EQ(replayed.step_ns, predicted.step_ns)
        << "seed " << seed << ": " << to_string(choice.schedule) << " K=" << choice.stages
        << " M=" << choice.microbatches << " recompute=" << choice.recompute;
  }
}

TEST(ExecReplay, TakesTheMeanDurationOfEachKindOnEachStage) {
  CostModel costs;
  costs.stages.resize(2);
  for (StageCost& c : costs.stages) c.forward_ns = c.backward_ns = c.recompute_ns = 7;
  StepReport m;
  m.timeline.events = {{0, "forward", 0, 0, 0, 10}, {0, "forward", 0, 1, 10, 20},     // mean 15
                       {1, "backward", 1, 0, 40, 30},                                // 30
                       {2, "transfer", 0, 0, 30, 1000}, {0, "allreduce", -1, -1, 0, 99}};  // not ops of a stage
  const CostModel got = with_measured_op_times(costs, m.timeline);
  EXPECT_EQ(got.stages[0].forward_ns, 15);
  EXPECT_EQ(got.stages[0].backward_ns, 7);  // not measured: the model's time stays
  EXPECT_EQ(got.stages[1].backward_ns, 30);
  EXPECT_EQ(got.stages[1].forward_ns, 7);
  EXPECT_EQ(got.stages[0].recompute_ns, 7);
}

}  // namespace
}  // namespace pipescope
