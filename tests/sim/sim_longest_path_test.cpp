// Oracle: the simulated step time equals the longest path through the op dependency
// graph built with Boost.Graph from the same schedule: same-device order edges,
// data edges (F(s-1,m) -> F(s,m), B(s+1,m) -> B(s,m)) carrying the link latency
// between devices. Links are bandwidth-free here, so no contention arises and the
// DAG's longest path is exact.
#include <gtest/gtest.h>

#include "tests/support/longest_path.h"
#include "planner/plan_builder.h"
#include "tests/support/random_plans.h"
#include "sim/simulator.h"

using namespace pipescope;

using pipescope::testing::longest_path;

TEST(SimLongestPath, EqualsBoostGraphLongestPathForRandomPlans) {
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    const pipescope::testing::RandomPlan rp = pipescope::testing::random_plan(seed);
    const Profile& p = rp.profile;
    const PlanChoice& choice = rp.choice;
    const Plan& plan = rp.plan;
    const Hardware& h = rp.hardware;
    CostModel c = build_cost_model(p, plan, h);
    Schedule s = schedule_for(plan);
    StepReport r = simulate(s, c, h, {});
    EXPECT_EQ(r.step_ns, longest_path(s, c, h))
        << "seed " << seed << ": " << to_string(choice.schedule) << " K=" << choice.stages
        << " M=" << choice.microbatches << " recompute=" << to_string(choice.recompute);
  }
}
