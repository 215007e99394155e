// The executor runs any valid schedule, not only the built-in ones: a V-shape (two
// stages per worker in V order, ZB-V's and DualPipeV's placement) and random
// topological orders of the op graph with any stage -> device map and a per-op mix of
// whole and split backward. Both of the executor's exact oracles hold for each:
// gradients equal one process's (relative error < 1e-5 in fp32) and the tracked
// activation peak of every worker equals the simulator's prediction byte for byte.
#include <gtest/gtest.h>

#include <random>

#include "core/cost_model.h"
#include "exec/runtime/executor.h"
#include "exec/profiler/profiler.h"
#include "tests/support/exec_test_models.h"
#include "planner/plan_builder.h"
#include "planner/zero_bubble_search.h"
#include "tests/support/random_schedules.h"
#include "sim/simulator.h"

namespace pipescope::exec {
namespace {

using pipescope::testing::random_schedule;
using pipescope::testing::RandomScheduleShape;
using pipescope::testing::v_shape_map;

// The tiny GPT's 8 layers cut evenly into the schedule's stages (S divides 8).
Plan plan_for(const Profile& profile, const Schedule& s, int microbatch_size) {
  Plan plan;
  plan.microbatches = s.microbatches();
  plan.batch_size = static_cast<int64_t>(microbatch_size) * s.microbatches();
  plan.recompute = recompute_from_r_ops(s.r_ops);
  plan.chunks = s.stages() / s.positions();
  const int per = profile.num_layers() / s.stages();
  LayerRanges ranges;
  for (int st = 0; st < s.stages(); ++st) ranges.emplace_back(st * per, st + 1 == s.stages() ? profile.num_layers() : (st + 1) * per);
  place_stages(plan, s, ranges, 1);
  return plan;
}

void expect_exact(const Profile& profile, const Schedule& s, const std::string& label) {
  ASSERT_NO_THROW(validate_schedule(s)) << label;
  const Plan plan = plan_for(profile, s, 2);
  RunOptions o;
  o.steps = 1;
  o.check_gradients = true;
  const RunResult r = run_threads(profile, plan, s, o);
  EXPECT_GE(r.max_gradient_error, 0.0) << label;
  EXPECT_LT(r.max_gradient_error, 1e-5) << label;
  const Hardware hw = Hardware::ideal(s.positions());
  const StepReport predicted = simulate(s, build_cost_model(profile, plan, hw), hw);
  test::expect_activation_peaks_equal(predicted, r.report, label);
}

Profile measured_profile() {
  ProfileOptions po;
  po.batch_sizes = {1, 2};
  po.warmup = 0;
  po.repeats = 1;
  return profile_model(test::tiny_gpt_model(), po);
}

TEST(ExecSchedule, VShapeRunsWithExactGradientsAndPeaks) {
  const Profile profile = measured_profile();
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    RandomScheduleShape shape;
    shape.devices = seed % 2 ? 2 : 4;  // 4 or 8 stages over the 8 layers
    shape.microbatches = 1 + static_cast<int>(rng() % 4);
    shape.r_ops = seed % 3 == 0;
    const Schedule s = random_schedule(rng, shape, v_shape_map(shape.devices));
    expect_exact(profile, s, "V-shape seed " + std::to_string(seed));
  }
}

TEST(ExecSchedule, RandomOrdersRunWithExactGradientsAndPeaks) {
  const Profile profile = measured_profile();
  int ran = 0, split_and_whole = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(seed);
    RandomScheduleShape shape;
    shape.devices = 1 + static_cast<int>(rng() % 4);
    if (shape.devices == 3) shape.devices = 2;  // S must divide the 8 layers
    shape.stages = shape.devices * (8 % (2 * shape.devices) == 0 && rng() % 2 ? 2 : 1);
    shape.microbatches = 1 + static_cast<int>(rng() % 5);
    shape.r_ops = rng() % 3 == 0;
    std::vector<int> map;
    for (int st = 0; st < shape.stages; ++st) map.push_back(st < shape.devices ? st : static_cast<int>(rng() % shape.devices));
    // Every device holds as many stages (a plan's rule): rotate the later stages' devices.
    for (int st = shape.devices; st < shape.stages; ++st) map[st] = (st * 7 + static_cast<int>(seed)) % shape.devices;
    std::vector<int> count(static_cast<std::size_t>(shape.devices), 0);
    for (int d : map) ++count[d];
    if (std::any_of(count.begin(), count.end(), [&](int c) { return c != count.front(); })) continue;
    const Schedule s = random_schedule(rng, shape, map);
    expect_exact(profile, s, "random order seed " + std::to_string(seed));
    ++ran;
    bool whole = false, split = false;
    for (const auto& ops : s.position_ops) {
      for (const Op& op : ops) whole |= op.kind == OpKind::Backward, split |= op.kind == OpKind::BackwardWeight;
    }
    split_and_whole += whole && split;
  }
  // Not vacuous: most seeds give a map with as many stages per device, and many mix B with I/W.
  EXPECT_GE(ran, 12);
  EXPECT_GE(split_and_whole, 4);
}

TEST(ExecSchedule, NewZeroBubbleSchedulesRunWithExactGradientsAndPeaks) {
  // zb-h1, zb-h2, zb-v, dualpipev (mixed B and I/W per op), zb-auto (searched on the
  // measured profile's costs), looped-bfs, interleaved-zb, v-min, v-half and v-zb over the tiny GPT's 8 layers: K x v stages divide 8. The
  // measured profile has weight_grad_bytes, so each I frees for real (exec/layers/layer.h).
  const Profile profile = measured_profile();
  struct Case {
    ScheduleKind kind;
    int K, M;
    bool recompute;
  };
  ASSERT_TRUE(profile.has_weight_grad_bytes());  // so every I below frees what its W does not need
  for (const Case& c : {Case{ScheduleKind::ZeroBubbleH1, 2, 4, false}, Case{ScheduleKind::ZeroBubbleH1, 4, 5, true},
                        Case{ScheduleKind::ZeroBubbleH2, 2, 5, false}, Case{ScheduleKind::ZeroBubbleH2, 4, 3, true},
                        Case{ScheduleKind::ZeroBubbleV, 2, 4, false}, Case{ScheduleKind::ZeroBubbleV, 4, 2, true},
                        Case{ScheduleKind::DualPipeV, 2, 4, false}, Case{ScheduleKind::DualPipeV, 4, 8, false},
                        Case{ScheduleKind::DualPipeV, 2, 5, true}, Case{ScheduleKind::ZeroBubbleAuto, 4, 6, false},
                        Case{ScheduleKind::LoopedBFS, 2, 3, false}, Case{ScheduleKind::LoopedBFS, 4, 4, true},
                        Case{ScheduleKind::InterleavedZeroBubble, 2, 4, false},
                        Case{ScheduleKind::InterleavedZeroBubble, 4, 8, true}, Case{ScheduleKind::VMin, 2, 4, false},
                        Case{ScheduleKind::VMin, 4, 6, true}, Case{ScheduleKind::VHalf, 4, 5, false},
                        Case{ScheduleKind::VHalf, 2, 3, true}, Case{ScheduleKind::VZeroBubble, 4, 8, false},
                        Case{ScheduleKind::VZeroBubble, 2, 2, true}}) {
    const std::string label = to_string(c.kind) + " K=" + std::to_string(c.K) + " M=" + std::to_string(c.M);
    // 2 chunks for the V-shapes and for looped-bfs / interleaved-zb (any number).
    Schedule s = make_schedule({c.kind, c.K, c.M, required_chunks(c.kind) == 1 ? 1 : 2, c.recompute});
    if (c.kind == ScheduleKind::ZeroBubbleAuto) {
      const Plan plan = plan_for(profile, s, 2);
      const Hardware hw = Hardware::ideal(c.K);
      ZeroBubbleSearchReport found;
      s = search_zero_bubble(build_cost_model(profile, plan, hw), hw, 2 * c.K, c.M, &found);
      EXPECT_LE(max_alive_microbatches(s), 2 * c.K) << label;
    }
    expect_exact(profile, s, label);
  }
}

}  // namespace
}  // namespace pipescope::exec
