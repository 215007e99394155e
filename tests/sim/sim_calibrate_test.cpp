// pipescope calibrate (sim/calibrate.h) against the simulator itself: a run simulated with
// a known runtime (core/runtime_costs.h), written out as the trace the bridge writes
// (docs/torch-run.md), must give back that runtime term for term, and the plan simulated
// with the fitted terms must take the simulated run's step to the nanosecond. Then the
// trace reader's refusals (sim/measured_trace.h) and the fit's own (too short, too noisy).
#include <gtest/gtest.h>

#include <random>

#include "sim/calibrate.h"
#include "sim/simulator.h"
#include "tests/support/input_error.h"

namespace pipescope {
namespace {

using testing::input_error_of;

CostModel calibration_costs(int K, int64_t f, int64_t b, int64_t params) {
  CostModel c;
  for (int s = 0; s < K; ++s) {
    StageCost x;
    x.first_layer = s;
    x.end_layer = s + 1;
    x.forward_ns = x.recompute_ns = f + 100 * s;
    x.backward_ns = b + 100 * s;
    x.backward_input_ns = x.backward_ns / 2;
    x.backward_weight_ns = x.backward_ns - x.backward_input_ns;
    x.activation_bytes = 1000;
    x.send_bytes = 4096;
    x.parameter_bytes = params * (s + 1);
    x.optimizer_ns = 5000 * (s + 1);  // the profile's optimizer step of the stage
    c.stages.push_back(x);
    c.position_device.push_back(s);
    c.position_devices.push_back({s});
    c.stage_position.push_back(s);
  }
  return c;
}

Json span(const char* cat, int rank, int step, int64_t start, int64_t dur, Json args = Json::object()) {
  args["step"] = step;
  return {{"ph", "X"}, {"pid", 0}, {"tid", rank}, {"cat", cat}, {"name", cat},
          {"ts", static_cast<double>(start) / 1000.0}, {"dur", static_cast<double>(dur) / 1000.0}, {"args", args}};
}

// The trace the bridge would write of `steps` runs of the simulated step, as the
// simulator charged `rt` (overlapped p2p): each gap is the previous op's loss and send
// issue, the next op's action, its receive issue, then a wait until its start.
Json simulated_trace(const Schedule& s, const CostModel& c, const RuntimeCosts& rt, int steps) {
  std::vector<int64_t> starts, ends;
  SimOptions o;
  o.runtime = &rt;
  o.op_starts_ns = &starts;
  o.op_ends_ns = &ends;
  const StepReport r = simulate(s, c, Hardware::ideal(s.positions()), o);
  Json events = Json::array();
  const int last = s.stages() - 1;
  int64_t offset = 0;
  for (int step = 0; step < steps; ++step) {
    int64_t step_end = 0;
    for (int d = 0; d < s.positions(); ++d) {
      const std::vector<Op>& ops = s.position_ops[d];
      const std::size_t first = op_offset(s, d);
      int64_t t = rt.prologue_ns;
      int64_t profiled_optimizer = 0;
      std::vector<bool> seen(c.stages.size(), false);
      const auto after = [&](const Op& op, int64_t end) {  // the loss and the send issue after an op
        int64_t at = end;
        if (op.kind == OpKind::Forward && op.stage == last && rt.loss_ns > 0) {
          events.push_back(span("loss", d, step, offset + at, rt.loss_ns, {{"stage", op.stage}, {"microbatch", op.microbatch}}));
          at += rt.loss_ns;
        }
        const auto out = op_sends(op, s.stages());
        if (out && s.stage_position[out->to_stage] != d) {
          events.push_back(span("p2p_issue", d, step, offset + at, rt.send_issue_ns,
                                {{"sends", 1}, {"recvs", 0}, {"send_bytes", 4096}, {"recv_bytes", 0}}));
          at += rt.send_issue_ns;
        }
        return at;
      };
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const Op& op = ops[i];
        if (i > 0) t = after(ops[i - 1], ends[first + i - 1]);
        t += rt.action_ns[static_cast<std::size_t>(op.kind)];
        const auto in = op_receives(op, s.stages());
        if (in && s.stage_position[in->from_stage] != d) {
          events.push_back(span("p2p_issue", d, step, offset + t, rt.recv_issue_ns,
                                {{"sends", 0}, {"recvs", 1}, {"send_bytes", 0}, {"recv_bytes", 4096}}));
          t += rt.recv_issue_ns;
        }
        EXPECT_GE(starts[first + i], t);
        if (starts[first + i] > t) events.push_back(span("p2p_wait", d, step, offset + t, starts[first + i] - t));
        events.push_back(span(to_string(op.kind).c_str(), d, step, offset + starts[first + i], ends[first + i] - starts[first + i],
                              {{"stage", op.stage}, {"microbatch", op.microbatch}}));
        if (!seen[op.stage]) profiled_optimizer += c.stages[op.stage].optimizer_ns;
        seen[op.stage] = true;
      }
      t = after(ops.back(), ends[first + ops.size() - 1]) + rt.epilogue_ns +
          (s.stage_position[last] == d ? rt.last_stage_epilogue_ns : 0);
      const int64_t opt = std::max<int64_t>(0, profiled_optimizer + rt.optimizer_ns);
      events.push_back(span("optimizer", d, step, offset + t, opt));
      events.push_back(span("step", d, step, offset, t + opt));
      step_end = std::max(step_end, t + opt);
    }
    EXPECT_EQ(step_end, r.step_ns);
    offset += step_end + 5000;
  }
  return {{"traceEvents", events}};
}

TEST(Calibrate, RecoversTheRuntimeASimulationRan) {
  // Property over 60 random (schedule, K, M, runtime) cases: every term comes back
  // within a nanosecond, and the plan predicted with the fitted terms takes the simulated
  // step exactly (the simulator is the reference implementation here).
  std::mt19937_64 rng(39);
  std::uniform_int_distribution<int64_t> us(1, 400);
  for (int trial = 0; trial < 60; ++trial) {
    const int K = 2 + trial % 3, M = K + static_cast<int>(rng() % 5);
    const Schedule s = trial % 3 == 0 ? make_gpipe(K, M) : trial % 3 == 1 ? make_1f1b(K, M) : make_zb_h1(K, M);
    const CostModel c = calibration_costs(K, 20'000, 40'000, 1 << 20);
    RuntimeCosts rt;
    for (int k = 0; k < 4; ++k) rt.action_ns[k] = 1000 * us(rng);
    rt.send_issue_ns = 1000 * us(rng);
    rt.recv_issue_ns = 1000 * us(rng);
    rt.loss_ns = 1000 * us(rng);
    rt.prologue_ns = 1000 * us(rng);
    rt.epilogue_ns = 1000 * us(rng);
    rt.last_stage_epilogue_ns = 1000 * us(rng);
    rt.optimizer_ns = 1000 * us(rng) - 2000;  // below the profile's on some runs
    if (trial % 6 == 2) rt.first_stage_split = FirstStageSplit::WeightPassRunsAll;
    const MeasuredTrace trace =
        read_measured_trace(JsonReader::from_text(simulated_trace(s, c, rt, 3).dump(), "trace.json"));
    const Calibration cal = calibrate(trace, c, {});
    const std::string where = s.name + " K=" + std::to_string(K) + " M=" + std::to_string(M);
    std::array<bool, 5> ran{};
    for (const auto& ops : s.position_ops) {
      for (const Op& op : ops) ran[static_cast<std::size_t>(op.kind)] = true;
    }
    // A kind the run never ran takes the mean of those it did.
    double ran_sum = 0;
    int ran_kinds = 0;
    for (std::size_t k = 0; k < 5; ++k) {
      if (ran[k]) {
        ran_sum += static_cast<double>(rt.action_ns[k]);
        ++ran_kinds;
      }
    }
    for (std::size_t k = 0; k < 5; ++k) {
      EXPECT_NEAR(cal.runtime.action_ns[k], ran[k] ? rt.action_ns[k] : ran_sum / ran_kinds, 1) << where << " action " << k;
    }
    EXPECT_NEAR(cal.runtime.send_issue_ns, rt.send_issue_ns, 1) << where;
    EXPECT_NEAR(cal.runtime.recv_issue_ns, rt.recv_issue_ns, 1) << where;
    EXPECT_NEAR(cal.runtime.loss_ns, rt.loss_ns, 1) << where;
    EXPECT_NEAR(cal.runtime.prologue_ns, rt.prologue_ns, 1) << where;
    EXPECT_NEAR(cal.runtime.epilogue_ns, rt.epilogue_ns, 1) << where;
    EXPECT_NEAR(cal.runtime.last_stage_epilogue_ns, rt.last_stage_epilogue_ns, 1) << where;
    EXPECT_NEAR(cal.runtime.optimizer_ns, rt.optimizer_ns, 1) << where;
    for (int64_t v : cal.runtime.op_ns) EXPECT_EQ(v, 0) << where;
    EXPECT_EQ(cal.runtime.first_stage_split, rt.first_stage_split) << where;
    EXPECT_NEAR(cal.step_cv, 0, 1e-12) << where;
    SimOptions o;
    o.runtime = &cal.runtime;
    SimOptions truth;
    truth.runtime = &rt;
    const Hardware h = Hardware::ideal(K);
    EXPECT_EQ(simulate(s, c, h, o).step_ns, simulate(s, c, h, truth).step_ns) << where;
  }
}

TEST(Calibrate, OneMicroBatchCannotTellThePrologueFromTheForward) {
  // M = 1: each rank's first op is its only F, so the prologue's column equals F's. The
  // fit says so and puts the prologue into F's action (40 + 90 us), and the written
  // runtime still predicts the run exactly (rather than the huge, opposite terms an
  // unchecked rank-deficient solve gives).
  const Schedule s = make_1f1b(2, 1);
  const CostModel c = calibration_costs(2, 20'000, 40'000, 1 << 20);
  RuntimeCosts rt;
  rt.action_ns[0] = 40'000;
  rt.action_ns[1] = 70'000;
  rt.prologue_ns = 90'000;
  const MeasuredTrace trace = read_measured_trace(JsonReader::from_text(simulated_trace(s, c, rt, 3).dump(), "t.json"));
  const Calibration cal = calibrate(trace, c, {});
  EXPECT_EQ(cal.runtime.prologue_ns, 0);
  EXPECT_EQ(cal.runtime.action_ns[0], 130'000);
  EXPECT_EQ(cal.runtime.action_ns[1], 70'000);
  bool noted = false;
  for (const std::string& n : cal.notes) noted |= n.find("prologue cannot be told") != std::string::npos;
  EXPECT_TRUE(noted);
  SimOptions fitted, truth;
  fitted.runtime = &cal.runtime;
  truth.runtime = &rt;
  EXPECT_EQ(simulate(s, c, Hardware::ideal(2), fitted).step_ns, simulate(s, c, Hardware::ideal(2), truth).step_ns);
}

TEST(Calibrate, OpTermIsTheMeasuredOpLessTheProfiledOne) {
  // The run's ops each took 7 us more than profiled (F) and 3 us less (B): op_us says so.
  const Schedule s = make_1f1b(2, 4);
  CostModel profiled = calibration_costs(2, 20'000, 40'000, 1 << 20);
  CostModel ran = profiled;
  for (StageCost& st : ran.stages) {
    st.forward_ns += 7000;
    st.backward_ns -= 3000;
  }
  RuntimeCosts rt;
  rt.action_ns[0] = 50'000;
  const MeasuredTrace trace = read_measured_trace(JsonReader::from_text(simulated_trace(s, ran, rt, 4).dump(), "t.json"));
  const Calibration cal = calibrate(trace, profiled, {});
  EXPECT_EQ(cal.runtime.op_ns[0], 7000);
  EXPECT_EQ(cal.runtime.op_ns[1], -3000);
  EXPECT_EQ(cal.runtime.action_ns[0], 50'000);
}

TEST(Calibrate, RefusesARunTooShortOrTooNoisy) {
  const Schedule s = make_1f1b(2, 4);
  const CostModel c = calibration_costs(2, 20'000, 40'000, 1 << 20);
  RuntimeCosts rt;
  Json two = simulated_trace(s, c, rt, 2);
  EXPECT_NE(input_error_of([&] { calibrate(read_measured_trace(JsonReader::from_text(two.dump(), "t.json")), c, {}); })
                .find("2 timed steps; calibrate needs at least 3"),
            std::string::npos);
  // Step 2 twice as long as the others: a coefficient of variation of 35%.
  Json noisy = simulated_trace(s, c, rt, 3);
  for (Json& e : noisy["traceEvents"]) {
    if (e["cat"] == "step" && e["args"]["step"] == 2) e["dur"] = e["dur"].get<double>() * 2;
  }
  EXPECT_NE(input_error_of([&] { calibrate(read_measured_trace(JsonReader::from_text(noisy.dump(), "t.json")), c, {}); })
                .find("too noisy to fit"),
            std::string::npos);
  // A plan with three positions for a two-rank trace.
  EXPECT_NE(input_error_of([&] {
              calibrate(read_measured_trace(JsonReader::from_text(simulated_trace(s, c, rt, 3).dump(), "t.json")),
                        calibration_costs(3, 1, 1, 1), {});
            }).find("2 ranks but the plan has 3"),
            std::string::npos);
}

TEST(Calibrate, LeavesOutAStepMoreThanTwiceTheMedianAndNamesIt) {
  // 8 simulated steps of a known runtime; one step stretched to 5x (a collector pause):
  // it leaves the fit, a note names it, and the terms come back exactly as the run charged
  // them. With 3 of 8 stretched (more than a quarter), the run is refused.
  const Schedule s = make_1f1b(2, 4);
  const CostModel c = calibration_costs(2, 20'000, 40'000, 1 << 20);
  RuntimeCosts rt;
  rt.action_ns[0] = 30'000;
  rt.action_ns[1] = 20'000;
  rt.send_issue_ns = 9000;
  rt.recv_issue_ns = 4000;
  const auto stretched = [&](std::initializer_list<int> steps) {
    Json trace = simulated_trace(s, c, rt, 8);
    for (Json& e : trace["traceEvents"]) {
      for (int step : steps) {
        if (e["cat"] == "step" && e["args"]["step"] == step) e["dur"] = e["dur"].get<double>() * 5;
      }
    }
    return read_measured_trace(JsonReader::from_text(trace.dump(), "t.json"));
  };
  const Calibration cal = calibrate(stretched({5}), c, {});
  EXPECT_EQ(cal.step_ms.size(), 7u);
  EXPECT_LT(cal.step_cv, 1e-12) << "the seven kept steps are the same simulated step";
  EXPECT_EQ(cal.runtime.action_ns[0], 30'000);
  EXPECT_EQ(cal.runtime.action_ns[1], 20'000);
  EXPECT_EQ(cal.runtime.send_issue_ns, 9000);
  EXPECT_EQ(cal.runtime.recv_issue_ns, 4000);
  bool named = false;
  for (const std::string& note : cal.notes) {
    named = named || (note.find("left out of the fit") != std::string::npos && note.find("step 5 (") != std::string::npos);
  }
  EXPECT_TRUE(named);
  EXPECT_NE(input_error_of([&] { calibrate(stretched({1, 4, 6}), c, {}); }).find("3 of 8 timed steps took more than 2x"),
            std::string::npos);
}

TEST(MeasuredTraceReader, RefusesBadInputNamingTheEvent) {
  const auto error = [](const std::string& events) {
    return input_error_of([&] { read_measured_trace(JsonReader::from_text("{\"traceEvents\": [" + events + "]}", "t.json")); });
  };
  const std::string step0 = R"({"ph": "X", "tid": 0, "cat": "step", "ts": 0, "dur": 100, "args": {"step": 0}})";
  EXPECT_EQ(error(step0), "");
  EXPECT_NE(input_error_of([] { read_measured_trace(JsonReader::from_text("[]", "t.json")); }).find("Chrome trace"),
            std::string::npos);
  EXPECT_NE(error("").find("no spans"), std::string::npos);
  EXPECT_NE(error(step0 + "," + step0).find("expected one \"step\" span, found 2"), std::string::npos);
  EXPECT_NE(error(R"({"ph": "X", "tid": 0, "cat": "forward", "ts": 0, "dur": 1, "args": {"step": 0, "stage": 0, "microbatch": 0}})")
                .find("found 0"),
            std::string::npos);
  EXPECT_NE(error(step0 + R"(, {"ph": "X", "tid": 0, "cat": "forward", "ts": 0, "dur": 1, "args": {"step": 0}})")
                .find("traceEvents[1].args.stage"),
            std::string::npos);
  EXPECT_NE(error(step0 + R"(, {"ph": "X", "tid": 0, "cat": "forward", "ts": 90, "dur": 20, "args": {"step": 0, "stage": 0, "microbatch": 0}})")
                .find("outside the rank's step span"),
            std::string::npos);
  EXPECT_NE(error(R"({"ph": "X", "tid": 0, "cat": "step", "ts": 0, "dur": -5, "args": {"step": 0}})").find("dur"),
            std::string::npos);
  EXPECT_NE(error(step0 + R"(, {"ph": "X", "tid": 0, "cat": "p2p_issue", "ts": 1, "dur": 1, "args": {"step": 0, "sends": 0, "recvs": 0, "send_bytes": 0, "recv_bytes": 0}})")
                .find("at least one send or receive"),
            std::string::npos);
  EXPECT_NE(error(R"({"ph": "X", "tid": -1, "cat": "step", "ts": 0, "dur": 1, "args": {"step": 0}})").find("tid"),
            std::string::npos);
}

}  // namespace
}  // namespace pipescope
