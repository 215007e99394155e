// The runtime's own costs (core/runtime_costs.h) as the simulator charges them, and the
// pipescope.runtime file that carries them. Expected numbers and why: 1F1B, K = 2, M = 2,
// F = B = 1000 ns, 100 ns per transfer (latency, free bandwidth), overlapped; runtime:
// action F 10, B 20; send issue 5, receive issue 7; loss 3; prologue 50; epilogue 30 and
// 40 more on the last stage's device (ns):
//   d0 F0 60-1060 (+5 send: arrives 1165), F1 1075-2075 (+5: arrives 2180);
//   d1 F0 1165-2165 (its 10 + 7 from 50 end at 67, then waits; + loss 3), B0 2188-3188
//     (+5: arrives at d0 3293), F1 3210-4210 (+3), B1 4233-5233 (+5: arrives 5338),
//     epilogue 5238-5308;
//   d0 B0 3293-4293, B1 5338-6338 (20 + 7 before each), epilogue 6338-6368: 6368 ns,
//   against 6200 ns for the ops alone (tests/sim/sim_p2p_test.cpp).
#include <gtest/gtest.h>

#include <map>

#include "core/runtime_costs.h"
#include "sim/simulator.h"
#include "tests/support/input_error.h"
#include "tests/support/test_support.h"

namespace pipescope {
namespace {

using testing::input_error_of;

// K stages on K devices, F and B each; the shared fixture (tests/support/test_support.h).
CostModel uniform(int K, int64_t f, int64_t b) { return testing::uniform_costs(K, K, f, b); }

RuntimeCosts hand_runtime() {
  RuntimeCosts rt;
  rt.action_ns[static_cast<int>(OpKind::Forward)] = 10;
  rt.action_ns[static_cast<int>(OpKind::Backward)] = 20;
  rt.send_issue_ns = 5;
  rt.recv_issue_ns = 7;
  rt.loss_ns = 3;
  rt.prologue_ns = 50;
  rt.epilogue_ns = 30;
  rt.last_stage_epilogue_ns = 40;
  return rt;
}

TEST(RuntimeCosts, HandComputedOneFOneB) {
  Hardware h = Hardware::ideal(2);
  h.link = {0.0, 0.1};
  const CostModel c = uniform(2, 1000, 1000);
  const RuntimeCosts rt = hand_runtime();
  SimOptions o;
  EXPECT_EQ(simulate(make_1f1b(2, 2), c, h, o).step_ns, 6200);
  o.runtime = &rt;
  const StepReport r = simulate(make_1f1b(2, 2), c, h, o);
  EXPECT_EQ(r.step_ns, 6368);
  // The timeline shows each term on its position's track: d0 50 + 2 x (10 + 5) + 2 x (20 + 7) + 30,
  // d1 50 + 2 x (10 + 7 + 3) + 2 x (20 + 5) + 70.
  std::map<int, int64_t> runtime_ns;
  for (const TimelineEvent& e : r.timeline.events) {
    if (e.category == "runtime") runtime_ns[e.track] += e.duration_ns;
  }
  EXPECT_EQ(runtime_ns[0], 164);
  EXPECT_EQ(runtime_ns[1], 210);
  // The ops' busy time is the ops alone: the runtime's terms are bubble.
  EXPECT_EQ(r.positions[0].busy_ns, 4000);
  bool noted = false;
  for (const std::string& n : r.notes) noted |= n.find("runtime costs of") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(RuntimeCosts, AllZeroChargesNothing) {
  // Property: a runtime of zeros gives the ops-alone prediction, event for event, on
  // every schedule kind here.
  const Hardware h = Hardware::ideal(4);
  const CostModel c = uniform(4, 1300, 2100);
  const RuntimeCosts zero;
  for (const Schedule& s : {make_gpipe(4, 8), make_1f1b(4, 8), make_zb_h1(4, 8), make_zb_h2(4, 8)}) {
    SimOptions o;
    const StepReport plain = simulate(s, c, h, o);
    o.runtime = &zero;
    const StepReport charged = simulate(s, c, h, o);
    EXPECT_EQ(plain.step_ns, charged.step_ns) << s.name;
    EXPECT_EQ(plain.timeline.events.size(), charged.timeline.events.size()) << s.name;
  }
}

TEST(RuntimeCosts, SingleDeviceClosedForm) {
  // K = 1: no messages, so the step is prologue + M (a_F + F + loss + a_B + B + op terms)
  // + epilogue (+ the last stage's, the same device) + the optimizer's per-byte term and
  // the runtime's own optimizer term.
  const Hardware h = Hardware::ideal(1);
  CostModel c = uniform(1, 1000, 2000);
  c.stages[0].parameter_bytes = 1 << 20;
  RuntimeCosts rt = hand_runtime();
  rt.op_ns[static_cast<int>(OpKind::Forward)] = 11;
  rt.op_ns[static_cast<int>(OpKind::Backward)] = -13;
  rt.optimizer_ns_per_parameter_byte = 0.5;
  rt.optimizer_ns = 700;
  SimOptions o;
  o.runtime = &rt;
  for (int M : {1, 3, 8}) {
    const int64_t per_mb = 10 + 1000 + 11 + 3 + 20 + 2000 - 13;
    EXPECT_EQ(simulate(make_1f1b(1, M), c, h, o).step_ns, 50 + M * per_mb + 30 + 40 + (1 << 19) + 700) << "M = " << M;
  }
}

TEST(RuntimeCosts, FirstStageWeightPassRunsTheWholeBackward) {
  // torch 2.13 on stage 0: I does nothing and W runs the whole backward. Every I of
  // stage 0 lasts 0 (no op term), every W of stage 0 lasts B; other stages as profiled.
  const Hardware h = Hardware::ideal(2);
  const CostModel c = uniform(2, 1000, 3000);
  RuntimeCosts rt;
  rt.first_stage_split = FirstStageSplit::WeightPassRunsAll;
  SimOptions o;
  o.runtime = &rt;
  const StepReport r = simulate(make_zb_h1(2, 4), c, h, o);
  int seen = 0;
  for (const TimelineEvent& e : r.timeline.events) {
    if (e.category == "backward_input") {
      EXPECT_EQ(e.duration_ns, e.stage == 0 ? 0 : 1500);
    }
    if (e.category == "backward_weight") {
      EXPECT_EQ(e.duration_ns, e.stage == 0 ? 3000 : 1500);
    }
    seen += e.category == "backward_weight";
  }
  EXPECT_EQ(seen, 8);
}

TEST(RuntimeCosts, InputPassThatFreesNothingKeepsTheStashUntilW) {
  // memory.input_pass_frees false (torch 2.13 keeps the graph from I to W): the stash of
  // every position peaks as if the profile had no weight_grad_bytes (I frees nothing),
  // above what the profile's rule gives (I frees 600 of each 1000-byte stash).
  const Hardware h = Hardware::ideal(4);
  CostModel frees = uniform(4, 1000, 2000);
  for (StageCost& st : frees.stages) st.freed_at_input_bytes = 600;
  CostModel keeps = frees;
  for (StageCost& st : keeps.stages) st.freed_at_input_bytes = 0;
  RuntimeCosts rt;
  rt.input_pass_frees = false;
  for (const Schedule& s : {make_zb_h1(4, 8), make_zb_h2(4, 8)}) {
    SimOptions o;
    const StepReport profiled = simulate(s, frees, h, o);
    o.runtime = &rt;
    const StepReport charged = simulate(s, frees, h, o);
    const StepReport reference = simulate(s, keeps, h, SimOptions{});
    bool above = false;
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(charged.positions[d].peak_activation_bytes, reference.positions[d].peak_activation_bytes) << s.name;
      above |= charged.positions[d].peak_activation_bytes > profiled.positions[d].peak_activation_bytes;
    }
    EXPECT_TRUE(above) << s.name;
    EXPECT_EQ(charged.step_ns, profiled.step_ns) << s.name;  // memory only
  }
}

TEST(RuntimeCosts, ALocalHopHoldsTheTensorBetweenTwoStagesOnce) {
  // memory.local_hop_shares_tensor (torch 2.13's set_local_fwd_input passes a same-device
  // stage's output detached: the same storage). ZB-V on K = 2 puts stages 1 and 2 on device
  // 1; each stage stashes 1000 bytes a micro-batch, 300 of them the tensor its first layer
  // shares with the stage before. Device 1 then peaks exactly as if stage 2 stashed 700;
  // device 0 (stages 0 and 3, whose hops cross devices) and the step are unchanged.
  const Hardware h = Hardware::ideal(2);
  const Schedule s = make_zb_v(2, 4);
  CostModel c = testing::uniform_costs(4, 2, 1000, 2000);
  for (int st = 1; st < 4; ++st) c.stages[st].shared_with_previous_bytes = 300;
  CostModel once = c;
  once.stages[2].activation_bytes = 700;
  RuntimeCosts rt;
  rt.local_hop_shares_tensor = true;
  SimOptions o;
  o.runtime = &rt;
  const StepReport shared = simulate(s, c, h, o);
  const StepReport reference = simulate(s, once, h, SimOptions{});
  const StepReport twice = simulate(s, c, h, SimOptions{});
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(shared.positions[d].peak_activation_bytes, reference.positions[d].peak_activation_bytes) << d;
  }
  EXPECT_LT(shared.positions[1].peak_activation_bytes, twice.positions[1].peak_activation_bytes);
  EXPECT_EQ(shared.positions[0].peak_activation_bytes, twice.positions[0].peak_activation_bytes);
  EXPECT_EQ(shared.step_ns, twice.step_ns);  // memory only
}

TEST(RuntimeFile, RoundTripsEveryField) {
  RuntimeCosts rt = hand_runtime();
  rt.framework = "torch.distributed.pipelining 2.13.0, gloo";
  rt.schedule_class = "Schedule1F1B";
  rt.action_ns = {95000, 120000, 41000, 38000, 0};
  rt.op_ns = {30000, -2000, 0, 250000, 0};
  rt.send_issue_ns_per_byte = 1000.0 / (1 << 20);  // 1 us per MiB
  rt.p2p = P2p::Blocking;
  rt.optimizer_ns_per_parameter_byte = 2.0 / 1024;
  rt.optimizer_ns = -150000;
  rt.first_stage_split = FirstStageSplit::WeightPassRunsAll;
  rt.input_pass_frees = false;
  rt.local_hop_shares_tensor = true;
  rt.sources["action_us"] = "measured";
  const Json j = runtime_costs_to_json(rt);
  const RuntimeCosts back = runtime_costs_from_json(JsonReader::from_text(j.dump(), "r.json"));
  EXPECT_EQ(runtime_costs_to_json(back), j);
  EXPECT_EQ(back.action_ns, rt.action_ns);
  EXPECT_EQ(back.op_ns, rt.op_ns);
  EXPECT_EQ(back.send_issue(1 << 20), 5 + 1000);
  EXPECT_EQ(back.first_stage_split, FirstStageSplit::WeightPassRunsAll);
  EXPECT_FALSE(back.input_pass_frees);
  EXPECT_TRUE(back.local_hop_shares_tensor);
}

TEST(RuntimeFile, RefusesBadInputNamingTheField) {
  const auto error = [](const std::string& body) {
    return input_error_of([&] {
      runtime_costs_from_json(
          JsonReader::from_text("{\"format\": \"pipescope.runtime\", \"version\": 1" + body + "}", "r.json"));
    });
  };
  EXPECT_EQ(error(""), "");
  EXPECT_NE(error(", \"action\": {}").find("unknown key \"action\""), std::string::npos);
  EXPECT_NE(error(", \"action_us\": {\"X\": 1}").find("action_us"), std::string::npos);
  EXPECT_NE(error(", \"action_us\": {\"F\": -1}").find("action_us.F"), std::string::npos);
  EXPECT_NE(error(", \"action_us\": {\"F\": \"fast\"}").find("action_us.F"), std::string::npos);
  EXPECT_NE(error(", \"message\": {\"send_issue_us\": 1e300}").find("message.send_issue_us"), std::string::npos);
  EXPECT_NE(error(", \"step\": {\"prologue\": 1}").find("unknown key \"prologue\""), std::string::npos);
  EXPECT_NE(error(", \"p2p\": \"batched-ish\"").find("p2p"), std::string::npos);
  EXPECT_NE(error(", \"split_backward\": {\"first_stage\": \"x\"}").find("split_backward.first_stage"),
            std::string::npos);
  EXPECT_NE(error(", \"sources\": {\"a\": 1}").find("sources.a"), std::string::npos);
  EXPECT_NE(error(", \"memory\": {\"input_pass_frees\": \"no\"}").find("memory.input_pass_frees"), std::string::npos);
  EXPECT_NE(error(", \"memory\": {\"frees\": true}").find("unknown key \"frees\""), std::string::npos);
  EXPECT_NE(input_error_of([] { runtime_costs_from_json(JsonReader::from_text("{\"format\": \"pipescope.plan\"}", "r.json")); })
                .find("format"),
            std::string::npos);
  EXPECT_NE(input_error_of([] { load_runtime_costs("no-such-runtime"); }).find("--runtime"), std::string::npos);
}

TEST(RuntimeFile, TheBundledTorchRuntimeReadsByName) {
  // profiles/runtimes/torch-2.13-gloo.json, by its name (dots and all): torch 2.13's rules
  // with the sources of each (the split on stage 0, the graph kept from I to W).
  const RuntimeCosts rt = load_runtime_costs("torch-2.13-gloo");
  EXPECT_EQ(rt.first_stage_split, FirstStageSplit::WeightPassRunsAll);
  EXPECT_FALSE(rt.input_pass_frees);
  for (const char* field : {"action_us", "op_us", "message", "p2p", "step", "split_backward", "memory"}) {
    EXPECT_TRUE(rt.sources.count(field)) << field;
  }
}

}  // namespace
}  // namespace pipescope

TEST(RuntimeCosts, InputPassThatFreesNothingStillDropsTheLoss) {
  // torch's I detaches the loss it walked from (_backward.py:262-264): on the last stage
  // the loss layer's stash (StageCost::loss_bytes, 300 of each 1000-byte stash) goes at I
  // even when the rest of the graph stays until W. One position, every W deferred:
  // F0 I0 F1 I1 F2 I2 W0 W1 W2. After F2 the device holds 700 + 700 + 1000 = 2400; I
  // freeing nothing would leave 3000, and the profile's own rule (I frees 600) 1800.
  const Hardware h = Hardware::ideal(1);
  CostModel c = uniform(1, 1000, 2000);
  c.stages[0].freed_at_input_bytes = 600;
  c.stages[0].loss_bytes = 300;
  RuntimeCosts rt;
  rt.input_pass_frees = false;
  SimOptions o;
  EXPECT_EQ(simulate(pipescope::testing::deferred_weight_order(), c, h, o).positions[0].peak_activation_bytes, 1800);
  o.runtime = &rt;
  EXPECT_EQ(simulate(pipescope::testing::deferred_weight_order(), c, h, o).positions[0].peak_activation_bytes, 2400);
  c.stages[0].loss_bytes = 0;
  EXPECT_EQ(simulate(pipescope::testing::deferred_weight_order(), c, h, o).positions[0].peak_activation_bytes, 3000);
}
