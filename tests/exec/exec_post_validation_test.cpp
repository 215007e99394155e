// The CPU executor under post-validation and blocking p2p, checked against the simulator
// and against synchronized training.
//  - Model time (RunOptions::model_time, exec/runtime/model_clock.h): the executor's step ends,
//    step time and steady-state step equal the simulator's prediction to the nanosecond,
//    synchronized and post-validation, p2p overlapped and blocking, for GPipe, 1F1B,
//    interleaved, zb-h1, zb-h2 and zb-v (the simulator is the reference: both replay
//    core/op_rules.h with the same costs; here the executor's real workers do).
//  - Without a fault, post-validation's parameters after N steps and its step-0
//    gradients equal synchronized training's bit for bit (each worker runs the same ops
//    on the same weights in the same order; only when its optimizer steps differs).
//  - A NaN written into one stage's gradient in step k (the PoisonGradient hook) fails the
//    global check: step k's update is skipped, and the parameters after N steps equal
//    those of N - 1 synchronized steps (every step trains on the same mini-batch).
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "core/error.h"
#include "exec/runtime/executor.h"
#include "tests/support/exec_test_models.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"

namespace pipescope::exec {
namespace {

// The tiny GPT's measured memory, with made-up times that differ from layer to layer and
// an optimizer step, so that every rule of the clock shows.
Profile timed_profile() { return test::timed_tiny_gpt_profile({0.004, 0.008}); }

// Links that cost something: 256 B per sample row of hidden 16 take ~0.26 ms at 1 MB/s.
Hardware slow_links(int devices) {
  Hardware h = Hardware::ideal(devices);
  h.link.bandwidth_gb_per_s = 0.001;
  h.link.latency_us = 7;
  return h;
}

Plan plan_of(const Profile& profile, ScheduleKind kind, int K, int M) { return test::uniform_plan(profile, kind, K, M, 1); }

struct Case {
  ScheduleKind kind;
  int K, M;
};
const Case kCases[] = {{ScheduleKind::GPipe, 2, 3},        {ScheduleKind::OneFOneB, 3, 5},
                       {ScheduleKind::Interleaved, 2, 4},  {ScheduleKind::ZeroBubbleH1, 3, 6},
                       {ScheduleKind::ZeroBubbleH2, 2, 4}, {ScheduleKind::ZeroBubbleV, 2, 4}};

std::string label(const Case& c, OptimizerStep step, P2p p2p) {
  return to_string(c.kind) + " K=" + std::to_string(c.K) + " M=" + std::to_string(c.M) + " " + to_string(step) +
         " p2p " + to_string(p2p);
}

TEST(ExecModelTime, StepTimesEqualThePrediction) {
  const Profile profile = timed_profile();
  int checked = 0;
  for (const Case& c : kCases) {
    const Plan plan = plan_of(profile, c.kind, c.K, c.M);
    const Schedule s = schedule_for(plan);
    const Hardware hw = slow_links(c.K);
    const CostModel costs = build_cost_model(profile, plan, hw);
    for (OptimizerStep step : {OptimizerStep::Synchronized, OptimizerStep::PostValidation}) {
      for (P2p p2p : {P2p::Overlapped, P2p::Blocking}) {
        const std::string what = label(c, step, p2p);
        SimOptions so;
        so.steps = 4;
        so.optimizer_step = step;
        so.p2p = p2p;
        const StepReport predicted = simulate(s, costs, hw, so);
        RunOptions o;
        o.steps = 4;
        o.optimizer_step = step;
        o.p2p = p2p;
        o.model_time = hw;
        o.timeout_s = 60;
        const RunResult m = run_threads(profile, plan, s, o);
        if (step == OptimizerStep::PostValidation) {
          EXPECT_EQ(m.report.step_end_ns, predicted.step_end_ns) << what;
          EXPECT_EQ(m.report.steady_state_step_ns, predicted.steady_state_step_ns) << what;
          EXPECT_GT(m.report.steady_state_step_ns, 0) << what;
          EXPECT_TRUE(m.rolled_back_steps.empty()) << what;
        } else {
          // A flushed step repeated: every measured step takes the predicted step.
          for (int64_t ns : m.step_ns) EXPECT_EQ(ns, predicted.step_ns) << what;
          EXPECT_EQ(m.report.step_ns, predicted.step_ns) << what;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 6 * 2 * 2);
}

// Blocking costs time where the links do (a sanity check that the flag reaches the workers).
TEST(ExecModelTime, BlockingIsSlowerWithSlowLinks) {
  const Profile profile = timed_profile();
  const Plan plan = plan_of(profile, ScheduleKind::OneFOneB, 3, 5);
  const Schedule s = schedule_for(plan);
  RunOptions o;
  o.steps = 2;
  o.model_time = slow_links(3);
  const int64_t overlapped = run_threads(profile, plan, s, o).report.step_ns;
  o.p2p = P2p::Blocking;
  EXPECT_GT(run_threads(profile, plan, s, o).report.step_ns, overlapped);
}

// The measurement says it ran in model time; dualpipev's overlapped F&B pairs (a profile
// with fb_overlap_ms) are not replayed, so model time refuses them by name.
TEST(ExecModelTime, SaysSoAndRefusesOverlappedPairs) {
  Profile profile = timed_profile();
  RunOptions o;
  o.model_time = slow_links(2);
  const Plan plain = plan_of(profile, ScheduleKind::OneFOneB, 2, 2);
  const RunResult r = run_threads(profile, plain, schedule_for(plain), o);
  bool said = false;
  for (const std::string& n : r.report.notes) said = said || n.rfind("model time:", 0) == 0;
  EXPECT_TRUE(said);
  for (LayerProfile& l : profile.layers) l.fb_overlap_ms.assign(profile.batch_sizes.size(), 0.001);
  const Plan pairs = plan_of(profile, ScheduleKind::DualPipeV, 2, 4);
  try {
    run_threads(profile, pairs, schedule_for(pairs), o);
    ADD_FAILURE() << "dualpipev with fb_overlap_ms ran in model time";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--clock model"), std::string::npos) << e.what();
  }
}

RunResult train(const Profile& profile, const Plan& plan, const Schedule& s, int steps, OptimizerStep step,
                std::optional<PoisonGradient> poison = std::nullopt) {
  RunOptions o;
  o.steps = steps;
  o.warmup = 0;
  o.optimizer_step = step;
  o.keep_parameters = true;
  o.check_gradients = true;
  o.poison_gradient = poison;
  o.optimizer.lr = 1e-2f;
  o.timeout_s = 60;
  return run_threads(profile, plan, s, o);
}

std::map<int, std::vector<std::vector<float>>> parameters_of(const RunResult& r) {
  std::map<int, std::vector<std::vector<float>>> all;
  for (const WorkerResult& w : r.workers) all.insert(w.parameters.begin(), w.parameters.end());
  return all;
}

TEST(ExecPostValidation, WithoutAFaultTrainsExactlyAsSynchronized) {
  const Profile profile = test::tiny_gpt_measured_profile();
  for (const Case& c : kCases) {
    const Plan plan = plan_of(profile, c.kind, c.K, c.M);
    const Schedule s = schedule_for(plan);
    const RunResult sync = train(profile, plan, s, 4, OptimizerStep::Synchronized);
    const RunResult post = train(profile, plan, s, 4, OptimizerStep::PostValidation);
    const std::string what = to_string(c.kind);
    EXPECT_EQ(parameters_of(post), parameters_of(sync)) << what;
    for (std::size_t d = 0; d < sync.workers.size(); ++d) {
      EXPECT_EQ(post.workers[d].gradients, sync.workers[d].gradients) << what << " device " << d;
      EXPECT_FALSE(sync.workers[d].gradients.empty()) << what;
    }
    EXPECT_EQ(post.losses, sync.losses) << what;
    EXPECT_TRUE(post.rolled_back_steps.empty()) << what;
    EXPECT_EQ(post.gradient_norms.size(), 4u) << what;
    EXPECT_LT(post.max_gradient_error, 1e-5) << what;
  }
}

TEST(ExecPostValidation, ANonFiniteGradientRollsTheStepBack) {
  const Profile profile = test::tiny_gpt_measured_profile();
  for (const Case& c : {kCases[1], kCases[3]}) {
    const Plan plan = plan_of(profile, c.kind, c.K, c.M);
    const Schedule s = schedule_for(plan);
    const auto three = parameters_of(train(profile, plan, s, 3, OptimizerStep::Synchronized));
    // A middle step (its next step is redone) and the last one (nothing runs after it).
    for (int k : {1, 3}) {
      const std::string what = to_string(c.kind) + " NaN in step " + std::to_string(k);
      const RunResult r = train(profile, plan, s, 4, OptimizerStep::PostValidation, PoisonGradient{c.K - 1, k});
      EXPECT_EQ(r.rolled_back_steps, std::vector<int>{k}) << what;
      EXPECT_EQ(parameters_of(r), three) << what;
      for (const auto& [layer, params] : parameters_of(r)) {
        for (const auto& p : params) {
          for (float v : p) ASSERT_TRUE(std::isfinite(v)) << what << " layer " << layer;
        }
      }
    }
  }
}

TEST(ExecPostValidation, RefusesWhatItCannotRun) {
  const Profile profile = test::tiny_gpt_measured_profile();
  const Plan plan = plan_of(profile, ScheduleKind::OneFOneB, 2, 2);
  const Schedule s = schedule_for(plan);
  RunOptions o;
  o.optimizer_step = OptimizerStep::PostValidation;
  o.warmup = 1;
  EXPECT_THROW(check_runnable(profile, plan, s, o), InputError);
  o.warmup = -1;
  o.transport = Transport::Mpi;
  EXPECT_THROW(check_runnable(profile, plan, s, o), InputError);
}

}  // namespace
}  // namespace pipescope::exec
