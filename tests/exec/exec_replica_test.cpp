// Replicated stages (r > 1, exec/runtime/replica_layout.h) keep the executor's exact oracles:
// 1. Gradients after one step, summed over the replicas by the all-reduce, equal one
//    process running the whole mini-batch (relative error < 1e-5 in fp32), and every
//    replica ends the step with the same parameters (bit for bit: the sum is formed once).
// 2. The tracked peak activation bytes per position equal the simulator's prediction
//    (which charges the profile's bytes at the per-replica micro-batch size b/r).
// Plans the executor cannot split evenly are refused with InputError naming the stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/cost_model.h"
#include "core/error.h"
#include "exec/runtime/executor.h"
#include "exec/profiler/profiler.h"
#include "tests/support/exec_test_models.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"

namespace pipescope::exec {
namespace {

struct Case {
  ScheduleKind kind;
  int K, r, M;
  bool recompute;
  int microbatch_size;
};

std::string name(const Case& c) {
  return to_string(c.kind) + " K=" + std::to_string(c.K) + " r=" + std::to_string(c.r) + " M=" + std::to_string(c.M) +
         " b=" + std::to_string(c.microbatch_size) + (c.recompute ? " recompute" : "");
}

Plan plan_for(const Profile& p, const Case& c) {
  PlanChoice choice;
  choice.stages = c.K;
  choice.replicas = c.r;
  choice.microbatches = c.M;
  choice.microbatch_size = c.microbatch_size;
  choice.schedule = c.kind;
  choice.chunks = c.kind == ScheduleKind::Interleaved ? 2 : 1;
  choice.recompute = recompute_from_r_ops(c.recompute);
  choice.partition = PartitionKind::Uniform;
  return make_plan(p, choice).plan;
}

const ScheduleKind kKinds[] = {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
                               ScheduleKind::ZeroBubbleH1};

RunResult run_one_step(const Profile& profile, const Plan& plan, const std::string& wait, bool check) {
  Schedule schedule = schedule_for(plan);
  RunOptions o;
  o.steps = 1;
  o.check_gradients = check;
  o.wait = parse_wait_mode(wait);
  return run_threads(profile, plan, schedule, o);
}

TEST(ExecReplicas, GradientsEqualOneProcessAndReplicasAgree) {
  const Profile profile = test::profile_with_specs(test::tiny_gpt_model());
  std::vector<Case> cases;
  for (ScheduleKind kind : kKinds) {
    for (int K : {1, 2}) {
      for (bool rc : {false, true}) cases.push_back({kind, K, 2, 4, rc, 2});
    }
  }
  cases.push_back({ScheduleKind::OneFOneB, 2, 3, 2, false, 3});
  cases.push_back({ScheduleKind::ZeroBubbleH1, 2, 3, 4, true, 6});
  int checked = 0;
  for (const Case& c : cases) {
    Plan plan = plan_for(profile, c);
    RunResult r = run_one_step(profile, plan, checked % 2 ? "spin" : "block", true);
    EXPECT_GE(r.max_gradient_error, 0.0) << name(c);
    EXPECT_LT(r.max_gradient_error, 1e-5) << name(c);
    EXPECT_TRUE(r.replicas_identical) << name(c);
    // The replicas' losses add up to the loss of the same plan without replication:
    // each replica's mean squared error is scaled by the whole mini-batch.
    Plan single = plan;
    for (PlanStage& s : single.stages) s.devices.resize(1);
    const double want = run_one_step(profile, single, "block", false).losses.at(0);
    EXPECT_NEAR(r.losses.at(0), want, 1e-6 * want) << name(c);
    ++checked;
  }
  // 4 schedules x K in {1, 2} x re-materialisation off/on at r = 2, and two at r = 3.
  EXPECT_EQ(checked, 18);
}

// The same oracle over random plans: K in 1..3, r in 2..3, M in 1..5 (a multiple of K
// for interleaved), b/r in 1..2 samples, any schedule, re-materialisation on or off.
TEST(ExecReplicas, RandomReplicatedPlansKeepTheGradientOracle) {
  const Profile profile = test::profile_with_specs(test::tiny_gpt_model());
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return static_cast<int>(lo + rng() % static_cast<uint64_t>(hi - lo + 1)); };
    Case c;
    c.kind = kKinds[pick(0, 3)];
    c.K = pick(1, 3);
    c.r = pick(2, 3);
    c.M = c.kind == ScheduleKind::Interleaved ? c.K * pick(1, 2) : pick(1, 5);
    c.recompute = pick(0, 1) == 1;
    c.microbatch_size = c.r * pick(1, 2);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + name(c));
    RunResult r = run_one_step(profile, plan_for(profile, c), seed % 2 ? "spin" : "block", true);
    EXPECT_LT(r.max_gradient_error, 1e-5);
    EXPECT_GE(r.max_gradient_error, 0.0);
    EXPECT_TRUE(r.replicas_identical);
  }
}

TEST(ExecReplicas, TrackedPeakActivationsEqualThePrediction) {
  ProfileOptions po;
  po.batch_sizes = {1, 2};
  po.warmup = 0;
  po.repeats = 1;
  const Profile profile = profile_model(test::tiny_gpt_model(), po);
  for (ScheduleKind kind : kKinds) {
    for (bool rc : {false, true}) {
      for (int K : {1, 2}) {
        // b/r = 3 lies past the profiled sizes: extrapolation must stay exact.
        Case c{kind, K, 2, 4, rc, 6};
        Plan plan = plan_for(profile, c);
        Schedule schedule = schedule_for(plan);
        Hardware hw = Hardware::ideal(K * c.r);
        StepReport predicted = simulate(schedule, build_cost_model(profile, plan, hw), hw);
        RunResult measured = run_one_step(profile, plan, "block", false);
        test::expect_activation_peaks_equal(predicted, measured.report, name(c));
      }
    }
  }
}

// The all-reduce shows on the prediction's "allreduce p" tracks, replica i > 0 on tracks
// of its own, and the step (as the simulator counts it) ends no earlier than any event.
TEST(ExecReplicas, MeasurementHasThePredictionsTracksAndCountsTheAllReduce) {
  const Profile profile = test::profile_with_specs(test::tiny_gpt_model());
  Case c{ScheduleKind::OneFOneB, 2, 2, 4, false, 2};
  Plan plan = plan_for(profile, c);
  Schedule schedule = schedule_for(plan);
  Hardware hw = Hardware::ideal(4);
  StepReport predicted = simulate(schedule, build_cost_model(profile, plan, hw), hw);
  RunOptions o;
  o.steps = 2;
  RunResult m = run_threads(profile, plan, schedule, o);
  const std::vector<std::string>& tracks = m.report.timeline.tracks;
  for (const std::string& t : predicted.timeline.tracks) {
    EXPECT_NE(std::find(tracks.begin(), tracks.end(), t), tracks.end()) << t;
  }
  for (const char* t : {"allreduce 0", "allreduce 1 replica 1", "device 1 replica 1", "link 0->1 replica 1"}) {
    EXPECT_NE(std::find(tracks.begin(), tracks.end(), t), tracks.end()) << t;
  }
  int allreduces = 0;
  std::size_t ops = 0;
  for (const TimelineEvent& e : m.report.timeline.events) {
    EXPECT_LE(e.start_ns + e.duration_ns, m.report.step_ns) << e.category << " on " << tracks[e.track];
    allreduces += e.category == "allreduce";
    ops += e.category != "transfer" && e.category != "allreduce" && e.category != "optimizer";
  }
  EXPECT_EQ(allreduces, 4);                  // one per worker: K x r
  EXPECT_EQ(ops, 2 * schedule.num_ops());    // every replica runs its position's ops
  EXPECT_GT(m.allreduce_ns, 0);
  EXPECT_EQ(m.report.positions[1].hardware_devices, (std::vector<int>{2, 3}));
}

TEST(ExecReplicas, UnevenReplicationIsRefused) {
  const Profile profile = test::profile_with_specs(test::tiny_gpt_model());
  Plan plan = plan_for(profile, {ScheduleKind::OneFOneB, 2, 2, 2, false, 2});
  plan.stages[1].devices = {2};
  Schedule schedule = schedule_for(plan);
  RunOptions o;
  try {
    run_threads(profile, plan, schedule, o);
    FAIL() << "a plan with r = 2 and r = 1 stages ran";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("stages[1].devices"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected 2 device(s)"), std::string::npos) << e.what();
  }
  // r = 2 cannot split a micro-batch of 3 samples evenly.
  Plan odd = plan_for(profile, {ScheduleKind::OneFOneB, 2, 2, 2, false, 3});
  try {
    run_threads(profile, odd, schedule_for(odd), o);
    FAIL() << "a micro-batch of 3 was split over 2 replicas";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("divisible by 2, got 3"), std::string::npos) << e.what();
  }
  // A fault in a replica that does not exist.
  Plan good = plan_for(profile, {ScheduleKind::OneFOneB, 2, 2, 2, false, 2});
  o.fault = FaultSpec{1, OpKind::Forward, 0, 0, false, false, 2};
  EXPECT_THROW(run_threads(profile, good, schedule_for(good), o), InputError);
}

}  // namespace
}  // namespace pipescope::exec
