// Activation offload on the CPU executor (exec/runtime/stage_offload.h), held to the simulator:
//  - In model time the executor's step, every op, transfer, optimizer step, offload and
//    reload (track, start and duration to the nanosecond), every position's tracked device
//    peak (total, activations, transients) and host-pool peak, the bytes sent to the host
//    and the delay equal the prediction, for gpipe, 1f1b, interleaved, zb-h1, v-min, v-half
//    v-zb and zb-v under offload all, all with fraction 0.5 and selective, over a host link
//    about as fast as the ops (some reloads come late under all; selective delays nothing
//    by construction). Both walk core/offload_walk.h with the same costs; the executor
//    moves real buffers and counts them in its own trackers.
//  - Offload changes no number: the gradients of a run with offload equal those without,
//    bit for bit, and one process's (relative error below 1e-5), on the steady clock.
//  - An infinitely fast host link (bandwidth 0, latency 0) keeps the step to the nanosecond
//    and lowers 1F1B's peak activations on the first position.
//  - What the executor cannot offload is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "core/cost_model.h"
#include "core/error.h"
#include "exec/runtime/executor.h"
#include "planner/plan_builder.h"
#include "sim/offload.h"
#include "sim/simulator.h"
#include "tests/support/exec_test_models.h"

namespace pipescope::exec {
namespace {

// The tiny GPT's measured memory (workspace included: exact peaks), with times that
// differ from layer to layer so that the host tracks queue.
Profile timed_profile() { return test::timed_tiny_gpt_profile({0.004}); }

// p2p at 0.01 GB/s (256 B in ~26 us); the host link at 0.05 GB/s to the host and 0.08 back
// (a 1.5 KB stash in ~30 us and ~19 us), about an op's time.
Hardware host_linked(int devices, Link to_host = {0.05, 2}, Link to_device = {0.08, 1}) {
  Hardware h = Hardware::ideal(devices);
  h.link.bandwidth_gb_per_s = 0.01;
  h.link.latency_us = 3;
  h.host_link = HostLink{to_host, to_device};
  return h;
}

struct Case {
  ScheduleKind kind;
  int K, M;
};
const Case kCases[] = {{ScheduleKind::GPipe, 2, 4},       {ScheduleKind::OneFOneB, 3, 5},
                       {ScheduleKind::Interleaved, 2, 4}, {ScheduleKind::ZeroBubbleH1, 3, 6},
                       {ScheduleKind::VMin, 4, 8},        {ScheduleKind::VHalf, 4, 8},
                       {ScheduleKind::VZeroBubble, 4, 8}, {ScheduleKind::ZeroBubbleV, 2, 4}};

struct Policy {
  OffloadPolicy policy;
  std::vector<double> fraction;
  std::string name;
};
const Policy kPolicies[] = {{OffloadPolicy::All, {}, "all"},
                            {OffloadPolicy::All, {0.5}, "all 0.5"},
                            {OffloadPolicy::Selective, {}, "selective"}};

RunOptions offload_run(const Schedule& s, const CostModel& costs, const Hardware& hw, const Offload& offload) {
  SimOptions so;
  so.offload = offload;
  RunOptions o;
  o.offload = OffloadRun{offload.policy, *hw.host_link, offload_decision(s, costs, hw, so)};
  o.timeout_s = 60;
  return o;
}

using Event = std::tuple<std::string, std::string, int, int, int64_t, int64_t>;
std::vector<Event> events_of(const StepReport& r) {
  std::vector<Event> out;
  for (const TimelineEvent& e : r.timeline.events) {
    out.emplace_back(r.timeline.tracks.at(e.track), e.category, e.stage, e.microbatch, e.start_ns, e.duration_ns);
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Tally {
  int runs = 0, offloaded = 0, delayed = 0, host_events = 0;
};

void expect_equal(const StepReport& p, const StepReport& m, const std::string& what, Tally& tally) {
  EXPECT_EQ(m.step_ns, p.step_ns) << what;
  EXPECT_EQ(m.offload, p.offload) << what;
  test::expect_same_position_memory(p, m, what);
  for (const PositionReport& a : p.positions) {
    tally.offloaded += a.offloaded_bytes > 0;
    tally.delayed += a.offload_delay_ns > 0;
  }
  const std::vector<Event> pe = events_of(p), me = events_of(m);
  EXPECT_EQ(me, pe) << what;
  for (const Event& e : pe) tally.host_events += std::get<1>(e) == "offload" || std::get<1>(e) == "reload";
  ++tally.runs;
}

TEST(ExecOffload, ModelTimeEqualsThePredictionOpForOpAndByteForByte) {
  const Profile profile = timed_profile();
  Tally tally;
  int selective_delayed = 0;
  for (const Case& c : kCases) {
    const Plan plan = test::uniform_plan(profile, c.kind, c.K, c.M, 1);
    const Schedule s = schedule_for(plan);
    const Hardware hw = host_linked(c.K);
    const CostModel costs = build_cost_model(profile, plan, hw);
    for (const Policy& pol : kPolicies) {
      const Offload offload{pol.policy, pol.fraction};
      const std::string what = to_string(c.kind) + " K=" + std::to_string(c.K) + " offload " + pol.name;
      SimOptions so;
      so.offload = offload;
      const StepReport predicted = simulate(s, costs, hw, so);
      RunOptions o = offload_run(s, costs, hw, offload);
      o.steps = 2;
      o.model_time = hw;
      const RunResult m = run_threads(profile, plan, s, o);
      expect_equal(predicted, m.report, what, tally);
      if (pol.policy == OffloadPolicy::Selective) {
        for (const PositionReport& st : m.report.positions) selective_delayed += st.offload_delay_ns > 0;
      }
    }
  }
  EXPECT_EQ(tally.runs, 8 * 3);
  EXPECT_GT(tally.offloaded, 8 * 3);  // most positions send something
  EXPECT_GT(tally.delayed, 0);        // the link is slow enough for some reloads to come late
  EXPECT_GT(tally.host_events, 100);
  EXPECT_EQ(selective_delayed, 0);
}

using GradientMap = std::map<int, std::vector<std::vector<float>>>;

GradientMap gradients_of(const RunResult& r) {
  GradientMap all;
  for (const WorkerResult& w : r.workers) all.insert(w.gradients.begin(), w.gradients.end());
  return all;
}

TEST(ExecOffload, ChangesNoGradient) {
  const Profile profile = test::tiny_gpt_measured_profile();
  for (const Case& c : {kCases[1], kCases[3], kCases[6]}) {
    const Plan plan = test::uniform_plan(profile, c.kind, c.K, c.M, 1);
    const Schedule s = schedule_for(plan);
    const Hardware hw = host_linked(c.K);
    const CostModel costs = build_cost_model(profile, plan, hw);
    RunOptions plain;
    plain.steps = 1;
    plain.check_gradients = true;
    const RunResult base = run_threads(profile, plan, s, plain);
    for (const Policy& pol : kPolicies) {
      const std::string what = to_string(c.kind) + " offload " + pol.name;
      RunOptions o = offload_run(s, costs, hw, {pol.policy, pol.fraction});
      o.steps = 1;
      o.check_gradients = true;
      const RunResult r = run_threads(profile, plan, s, o);
      EXPECT_LT(r.max_gradient_error, 1e-5) << what;
      EXPECT_EQ(gradients_of(r), gradients_of(base)) << what;
      EXPECT_FALSE(gradients_of(r).empty()) << what;
      EXPECT_EQ(r.losses, base.losses) << what;
    }
  }
}

TEST(ExecOffload, InfinitelyFastLinkKeepsTheStep) {
  const Profile profile = timed_profile();
  const Plan plan = test::uniform_plan(profile, ScheduleKind::OneFOneB, 3, 6, 1);
  const Schedule s = schedule_for(plan);
  const Hardware hw = host_linked(3, {0, 0}, {0, 0});
  const CostModel costs = build_cost_model(profile, plan, hw);
  RunOptions plain;
  plain.steps = 2;
  plain.model_time = hw;
  const RunResult base = run_threads(profile, plan, s, plain);
  RunOptions o = offload_run(s, costs, hw, {OffloadPolicy::All, {}});
  o.steps = 2;
  o.model_time = hw;
  const RunResult off = run_threads(profile, plan, s, o);
  EXPECT_EQ(off.report.step_ns, base.report.step_ns);
  // 1F1B's first position holds K = 3 stashes at its peak; offloaded at once it holds two
  // (the F running and the one reloaded for the B after it).
  const int64_t three = base.report.positions[0].peak_activation_bytes;
  EXPECT_EQ(off.report.positions[0].peak_activation_bytes * 3, three * 2);
  for (const PositionReport& st : off.report.positions) EXPECT_EQ(st.offload_delay_ns, 0);
}

TEST(ExecOffload, RefusesWhatItCannotRun) {
  const Profile profile = test::tiny_gpt_measured_profile();
  const Plan plan = test::uniform_plan(profile, ScheduleKind::OneFOneB, 2, 4, 1);
  const Schedule s = schedule_for(plan);
  const Hardware hw = host_linked(2);
  const CostModel costs = build_cost_model(profile, plan, hw);
  auto refused = [&](RunOptions o, const std::string& message) {
    try {
      check_runnable(profile, plan, s, o);
      ADD_FAILURE() << "ran: " << message;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  RunOptions o = offload_run(s, costs, hw, {OffloadPolicy::All, {}});
  RunOptions mpi = o;
  mpi.transport = Transport::Mpi;
  refused(mpi, "the executor offloads on the cpu backend's threads transport only");
  RunOptions post = o;
  post.optimizer_step = OptimizerStep::PostValidation;
  post.warmup = 0;
  refused(post, "flushed steps with a synchronized optimizer step only");
  RunOptions odd = offload_run(s, costs, hw, {OffloadPolicy::All, {0.3}});
  bool whole = true;
  for (int64_t b : odd.offload->slot_bytes) whole = whole && b % 4 == 0;
  EXPECT_FALSE(whole);  // 0.3 of the tiny GPT's stashes falls between floats
  refused(odd, "not a whole number of the cpu backend's 4-byte elements");
  RunOptions few = o;
  few.offload->slot_bytes.pop_back();
  refused(few, "expected one offload byte count per (stage, micro-batch), 8, got 7");
}

}  // namespace
}  // namespace pipescope::exec
