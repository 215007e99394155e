// with_measured_op_times (sim/replay.h), the replay behind `run --compare`'s "replayed" row.
// Oracles: a prediction replayed through its own timeline is itself, to the nanosecond
// (every op of a kind on a stage has the same duration, so the means are exact), for
// random plans over the four schedules (tests/support/random_plans.h); and a hand-made timeline gives the means one
// computes by hand.
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "planner/plan_builder.h"
#include "tests/support/random_plans.h"
#include "sim/replay.h"
#include "sim/simulator.h"

namespace pipescope {
namespace {

TEST(ExecReplay, ReplayingAPredictionReproducesItExactly) {
  for (uint64_t seed = 1; seed <= 80; ++seed) {
    const testing::RandomPlan rp = testing::random_plan(seed);
    const Profile& p = rp.profile;
    const PlanChoice& choice = rp.choice;
    const Plan& plan = rp.plan;
    const Hardware& h = rp.hardware;
    const CostModel costs = build_cost_model(p, plan, h);
    const Schedule s = schedule_for(plan);
    const StepReport predicted = simulate(s, costs, h, {});
    const StepReport replayed = simulate(s, with_measured_op_times(costs, predicted.timeline), h, {});
    EXPECT_EQ(replayed.step_ns, predicted.step_ns)
        << "seed " << seed << ": " << to_string(choice.schedule) << " K=" << choice.stages
        << " M=" << choice.microbatches << " recompute=" << to_string(choice.recompute);
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
