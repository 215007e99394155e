// Partitioners: uniform's remainder rule, gpipe's least-variance cut and the optimal
// partition against brute force on random small instances (they must be equal, not
// close), and the optimal partition's memory prediction against the simulator.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/schedule.h"
#include "interop/synth_profile.h"
#include "planner/partition.h"
#include "planner/partitioner.h"
#include "tests/planner/planner_test_util.h"
#include "planner/plan_builder.h"
#include "planner/stage_model.h"
#include "sim/simulator.h"
#include "tests/planner/planner_test_util.h"

namespace pipescope {
namespace {

using testing::brute_force_min_max;
using testing::random_hardware;
using testing::finish_instance;
using testing::Instance;
using testing::random_choice;
using testing::RandomChoice;
using testing::random_profile;

TEST(UniformPartition, SpreadsTheRemainderOverTheFirstStages) {
  // 10 layers in 4 stages: 10 = 3 + 3 + 2 + 2, never 2 + 2 + 2 + 4.
  LayerRanges r = uniform_partition(10, 4);
  EXPECT_EQ(r, (LayerRanges{{0, 3}, {3, 6}, {6, 8}, {8, 10}}));
  EXPECT_THROW(uniform_partition(3, 4), InputError);
}

TEST(KeepLossWithProducer, MovesTheCutBeforeALossAloneDownToAStageThatKeepsALayer) {
  // pipescope_torch profile --loss ends a profile with the loss (spec {"type": "loss"}),
  // which torch runs as the last stage's loss_fn: a stage of the loss alone cannot run.
  UniformSpec u;
  u.layers = 5;
  Profile p = make_uniform_profile(u);
  p.layers.back().spec = Json{{"type", "loss"}};
  LayerRanges r{{0, 3}, {3, 4}, {4, 5}};
  keep_loss_with_producer(p, r);
  EXPECT_EQ(r, (LayerRanges{{0, 2}, {2, 3}, {3, 5}}));
  // The move cascades past stages it would leave empty: 4 stages of 2, 1, 1, 1 layers.
  r = {{0, 2}, {2, 3}, {3, 4}, {4, 5}};
  keep_loss_with_producer(p, r);
  EXPECT_EQ(r, (LayerRanges{{0, 1}, {1, 2}, {2, 3}, {3, 5}}));
  // One layer per stage, the loss's included: no stage can take the loss; left as is.
  r = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}};
  keep_loss_with_producer(p, r);
  EXPECT_EQ(r, (LayerRanges{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}));
  // Without a loss layer nothing moves.
  p.layers.back().spec = Json();
  r = {{0, 3}, {3, 4}, {4, 5}};
  keep_loss_with_producer(p, r);
  EXPECT_EQ(r, (LayerRanges{{0, 3}, {3, 4}, {4, 5}}));
}

TEST(KeepLossWithProducer, PlansNeverEndInALossAloneWhenTheyCanNot) {
  // Property over every partitioner, K, v and a random profile ending in a loss layer:
  // where the model's own layers are at least the stages, the last stage holds one.
  std::mt19937_64 rng(39);
  for (int trial = 0; trial < 60; ++trial) {
    const int L = 3 + static_cast<int>(rng() % 8);
    Profile p = testing::random_profile(rng, L, false);
    p.layers.back().spec = Json{{"type", "loss"}};
    p.layers.back().forward_ms = {0.001, 0.002, 0.004};
    for (PartitionKind kind : {PartitionKind::Uniform, PartitionKind::GPipe, PartitionKind::Optimal}) {
      PlanChoice c;
      c.stages = 1 + static_cast<int>(rng() % std::min(4, L - 1));
      c.microbatches = 4;
      c.partition = kind;
      const LayerRanges r = make_plan(p, c).plan.layer_ranges();
      EXPECT_LT(r.back().first, L - 1) << "L = " << L << " K = " << c.stages << " " << to_string(kind);
    }
  }
}

TEST(GpipePartition, MinimisesTheVarianceOfStageCosts) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int L = 2 + static_cast<int>(rng() % 8), S = 1 + static_cast<int>(rng() % std::min(L, 4));
    const Profile p = random_profile(rng, L, false);
    const LayerRanges r = gpipe_partition(p, S, 2.0, seed % 2);
    auto cost = [&](int first, int end) {
      double c = 0;
      for (int l = first; l < end; ++l) c += p.forward_ms(l, 2.0) * (seed % 2 ? 2 : 1) + p.backward_ms(l, 2.0);
      return c;
    };
    double got = 0;
    for (auto [a, b] : r) got += cost(a, b) * cost(a, b);
    // Brute force over every cut of the sum of squares (total fixed: same argmin as variance).
    double best = 1e300;
    std::function<void(int, int, double)> go = [&](int s, int first, double acc) {
      if (s == S - 1) {
        best = std::min(best, acc + cost(first, L) * cost(first, L));
        return;
      }
      for (int end = first + 1; end <= L - (S - 1 - s); ++end) go(s + 1, end, acc + cost(first, end) * cost(first, end));
    };
    go(0, 0, 0);
    EXPECT_NEAR(got, best, 1e-9 * best);
  }
}

Instance random_instance(uint64_t seed, bool allow_interleaved) {
  std::mt19937_64 rng(seed);
  const int L = 2 + static_cast<int>(rng() % 8);
  const RandomChoice c = random_choice(rng, L, allow_interleaved ? 4 : 3);
  Instance in;
  in.profile = random_profile(rng, L, rng() % 2);
  finish_instance(rng, c, in);
  return in;
}

TEST(OptimalPartition, EqualsTheBruteForceOptimumOnRandomInstances) {
  int feasible = 0, infeasible = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Instance in = random_instance(seed, true);
    const StageModel m(in.profile, in.hardware, in.schedule, in.spec);
    auto cost = [&](int s, int i, int j) {
      if (m.constrains_memory() && m.memory_bytes(s, i, j) > m.memory_limit()) return kInfeasible;
      return m.time_ns(s, i, j);
    };
    const int64_t expected = brute_force_min_max(m.layers(), m.stages(), cost);
    const MinMaxResult got = optimal_partition(m);
    ASSERT_EQ(got.value, expected);
    if (expected == kInfeasible) {
      EXPECT_TRUE(got.ranges.empty());
      ++infeasible;
      continue;
    }
    ++feasible;
    // The ranges it returns achieve the value it claims.
    ASSERT_EQ(static_cast<int>(got.ranges.size()), m.stages());
    int64_t worst = 0;
    for (int s = 0; s < m.stages(); ++s) worst = std::max(worst, cost(s, got.ranges[s].first, got.ranges[s].second));
    EXPECT_EQ(worst, expected);
  }
  // The generator must exercise both outcomes for the test to mean anything.
  EXPECT_GT(feasible, 100);
  EXPECT_GT(infeasible, 10);
}

TEST(OptimalPartition, EqualsThePlainDynamicProgrammeOnLargerInstances) {
  // 30 to 90 layers, up to 16 stages: too many cuts to enumerate, so the reference is
  // the unpruned O(S L^2) programme over the same stage costs.
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int L = 30 + static_cast<int>(rng() % 61);
    const int K = 1 + static_cast<int>(rng() % 16);
    const int r = 1 + static_cast<int>(rng() % 2);
    const Profile p = random_profile(rng, L, rng() % 2);
    const int64_t memory = rng() % 3 == 0 ? 0 : (int64_t{1} << 28) + static_cast<int64_t>(rng() % (int64_t{1} << 31));
    const Hardware h = random_hardware(rng, K * r, memory);
    const Schedule sched = make_schedule({rng() % 2 ? ScheduleKind::GPipe : ScheduleKind::OneFOneB, K,
                                          1 + static_cast<int>(rng() % 8), 1, static_cast<bool>(rng() % 2)});
    StageModelSpec spec;
    spec.microbatch_size = 2.0 * r;
    spec.replicas = r;
    const StageModel m(p, h, sched, spec);
    auto cost = [&](int s, int i, int j) {
      if (m.constrains_memory() && m.memory_bytes(s, i, j) > m.memory_limit()) return kInfeasible;
      return m.time_ns(s, i, j);
    };
    EXPECT_EQ(optimal_partition(m).value, testing::plain_dp_min_max(L, K, cost));
  }
}

TEST(OptimalPartition, MinimumMemoryEqualsBruteForce) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Instance in = random_instance(seed, false);
    const StageModel m(in.profile, in.hardware, in.schedule, in.spec);
    auto cost = [&](int s, int i, int j) { return m.memory_bytes(s, i, j); };
    EXPECT_EQ(min_memory_partition(m).value, brute_force_min_max(m.layers(), m.stages(), cost));
  }
}

namespace {
// The stage model's memory of each stage of `ranges` equals the simulator's peak for the
// plan of that cut (one device per replica, stage s on devices s r .. s r + r - 1).
void expect_stage_memory_is_the_simulators(const Instance& in, const StageModelSpec& spec, const StageModel& m,
                                           const LayerRanges& ranges) {
  Plan plan;
  plan.batch_size = static_cast<int64_t>(spec.microbatch_size) * in.schedule.microbatches();
  plan.microbatches = in.schedule.microbatches();
  plan.schedule = parse_schedule_kind(in.schedule.name);
  plan.recompute = recompute_from_r_ops(in.schedule.r_ops);
  for (int s = 0; s < m.stages(); ++s) {
    std::vector<int> devices;
    for (int k = 0; k < spec.replicas; ++k) devices.push_back(s * spec.replicas + k);
    plan.stages.push_back({ranges[s].first, ranges[s].second, devices});
  }
  const StepReport report = simulate(in.schedule, build_cost_model(in.profile, plan, in.hardware), in.hardware,
                                     {.record_timeline = false, .model = ""});
  const std::vector<int64_t> predicted = m.stage_memory(ranges);
  for (int s = 0; s < m.stages(); ++s) EXPECT_EQ(predicted[s], report.positions[s].peak_memory_bytes) << "stage " << s;
}
}  // namespace

TEST(OptimalPartition, PredictedStageMemoryEqualsTheSimulatorsPeakByteForByte) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Instance in = random_instance(seed, false);
    StageModelSpec spec = in.spec;
    spec.constrain_memory = false;
    const StageModel m(in.profile, in.hardware, in.schedule, spec);
    expect_stage_memory_is_the_simulators(in, spec, m, optimal_partition(m).ranges);
  }
}

TEST(OptimalPartition, StageMemoryCountsATensorTwoLayersSaveOnceLikeTheSimulator) {
  // The same byte-for-byte property on chains whose layers share part of what they save
  // with the next (Profile::shared_with_next_bytes: 0, 1/4, 1/2 or 3/4 of the layer's
  // stash) and, on every other seed, keep half their stash for W: the stage model's
  // prefix sums and the cost model's Profile::stash_bytes must agree on every cut, the
  // optimal one and the uniform one.
  int shared_cuts = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Instance in = random_instance(seed, false);
    in.profile.edges.clear();
    const int L = in.profile.num_layers();
    for (int l = 0; l < L; ++l) {
      LayerProfile& layer = in.profile.layers[l];
      if (seed % 2) {
        for (double a : layer.activation_bytes) layer.weight_grad_bytes.push_back(std::floor(a / 2));
      }
      if (l + 1 == L) continue;
      const double share = static_cast<double>((seed + static_cast<uint64_t>(l)) % 4) / 4;
      for (double a : layer.activation_bytes) layer.shared_with_next_bytes.push_back(std::floor(a * share));
    }
    StageModelSpec spec = in.spec;
    spec.constrain_memory = false;
    const StageModel m(in.profile, in.hardware, in.schedule, spec);
    for (const LayerRanges& ranges : {optimal_partition(m).ranges, uniform_partition(L, m.stages())}) {
      for (auto [first, end] : ranges) shared_cuts += end - first > 1 ? 1 : 0;
      expect_stage_memory_is_the_simulators(in, spec, m, ranges);
    }
  }
  EXPECT_GT(shared_cuts, 100) << "stages of several layers, where sharing counts";
}

TEST(OptimalPartition, StageTimeScalesWithTheDeviceItLandsOn) {
  // 8 equal layers of 3 ms (f 1 + b 2 at batch 1); device 1 is 3x faster. Slowest stage
  // n0 x 3 ms vs n1 x 1 ms with n0 + n1 = 8: n0 = 2, n1 = 6 gives 6 ms each.
  UniformSpec u;
  u.layers = 8;
  const Profile p = make_uniform_profile(u);
  Hardware h = Hardware::ideal(2);
  h.speed = {1.0, 3.0};
  PlanChoice c;
  c.stages = 2;
  c.microbatches = 4;
  c.microbatch_size = 1;
  c.hardware = &h;
  EXPECT_EQ(make_plan(p, c).plan.layer_ranges(), (LayerRanges{{0, 2}, {2, 8}}));
  h.speed = {3.0, 1.0};
  EXPECT_EQ(make_plan(p, c).plan.layer_ranges(), (LayerRanges{{0, 6}, {6, 8}}));
}

TEST(OptimalPartition, BalancedIsAnAliasOfOptimal) {
  std::mt19937_64 rng(7);
  const Profile p = random_profile(rng, 12, false);
  PlanChoice a, b;
  a.stages = b.stages = 4;
  a.microbatches = b.microbatches = 8;
  a.partition = parse_partition_kind("balanced");
  b.partition = parse_partition_kind("optimal");
  EXPECT_EQ(make_plan(p, a).plan.layer_ranges(), make_plan(p, b).plan.layer_ranges());
  EXPECT_THROW(parse_partition_kind("fastest"), InputError);
}

}  // namespace
}  // namespace pipescope
