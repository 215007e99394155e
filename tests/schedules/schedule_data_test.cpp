// Schedules are data: any valid op order and stage -> device map, whoever wrote it,
// validates, simulates to the longest path through its op graph (Boost.Graph oracle,
// tests/support/longest_path.h), and keeps the op rules of core/op_rules.h; bad orders are
// refused with a message that names the ops and devices involved.
#include <gtest/gtest.h>

#include <random>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/op_rules.h"
#include "tests/support/longest_path.h"
#include "planner/plan_builder.h"
#include "tests/support/random_schedules.h"
#include "sim/simulator.h"

using namespace pipescope;
using pipescope::testing::longest_path;
using pipescope::testing::random_schedule;
using pipescope::testing::RandomScheduleShape;
using pipescope::testing::v_shape_map;

namespace {

// L = 2 S layers with random times (split backward measured), a plan that places the
// schedule's stages two layers each, and bandwidth-free links with a random latency.
struct PlannedSchedule {
  Profile profile;
  Plan plan;
  Hardware hardware;
  CostModel costs;
};

PlannedSchedule setup_for(const Schedule& s, std::mt19937_64& rng) {
  PlannedSchedule u;
  Profile& p = u.profile;
  p.model = "random";
  p.batch_sizes = {1};
  for (int l = 0; l < 2 * s.stages(); ++l) {
    LayerProfile layer;
    layer.name = "l";
    layer.name += std::to_string(l);  // not "l" + to_string: GCC 12 -Wrestrict false positive (PR105329)
    const double f = 0.01 + (rng() % 1000) / 100.0, bi = 0.01 + (rng() % 1000) / 100.0,
                 w = 0.01 + (rng() % 1000) / 100.0;
    layer.forward_ms = {f};
    layer.backward_ms = {bi + w};
    layer.backward_input_ms = {bi};
    layer.backward_weight_ms = {w};
    layer.activation_bytes = {1000.0 * (1 + rng() % 100)};
    layer.output_bytes = {100.0};
    layer.parameter_bytes = 1000;
    p.layers.push_back(layer);
  }
  u.plan.microbatches = s.microbatches();
  u.plan.batch_size = s.microbatches();
  u.plan.recompute = recompute_from_r_ops(s.r_ops);
  u.plan.chunks = s.stages() / s.positions();
  LayerRanges ranges;
  for (int st = 0; st < s.stages(); ++st) ranges.emplace_back(2 * st, 2 * st + 2);
  place_stages(u.plan, s, ranges, 1);
  u.hardware = Hardware::ideal(s.positions());
  u.hardware.link = {0.0, static_cast<double>(rng() % 50)};
  u.costs = build_cost_model(u.profile, u.plan, u.hardware);
  return u;
}

}  // namespace

TEST(ScheduleData, RandomOrdersAndMapsSimulateToTheLongestPath) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    RandomScheduleShape shape;
    shape.devices = 1 + static_cast<int>(rng() % 4);
    shape.stages = shape.devices * (1 + static_cast<int>(rng() % 3)) + static_cast<int>(rng() % 2);
    shape.microbatches = 1 + static_cast<int>(rng() % 6);
    shape.r_ops = rng() % 3 == 0;
    const Schedule s = random_schedule(rng, shape);
    ASSERT_NO_THROW(validate_schedule(s)) << "seed " << seed;
    if (s.stages() % s.positions() != 0) continue;  // a plan needs as many stages per device
    const PlannedSchedule u = setup_for(s, rng);
    const StepReport r = simulate(s, u.costs, u.hardware, {});
    EXPECT_EQ(r.step_ns, longest_path(s, u.costs, u.hardware)) << "seed " << seed;
  }
}

// A hand-built V-shape (device d holds stages d and 2K-1-d; the turn at the last device
// passes F and B between two stages of one device without a transfer).
TEST(ScheduleData, VShapeSimulatesToTheLongestPathAndKeepsEveryStagesMemory) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    std::mt19937_64 rng(seed);
    RandomScheduleShape shape;
    shape.devices = 2 + static_cast<int>(rng() % 3);
    shape.microbatches = 1 + static_cast<int>(rng() % 5);
    const Schedule s = random_schedule(rng, shape, v_shape_map(shape.devices));
    ASSERT_NO_THROW(validate_schedule(s));
    const PlannedSchedule u = setup_for(s, rng);
    const StepReport r = simulate(s, u.costs, u.hardware, {});
    EXPECT_EQ(r.step_ns, longest_path(s, u.costs, u.hardware)) << "seed " << seed;
    // Device d's report lists its two stages, d and 2K-1-d.
    const int K = shape.devices;
    for (int d = 0; d < K; ++d) {
      ASSERT_EQ(r.positions[d].layers.size(), 2u);
      EXPECT_EQ(r.positions[d].layers[0].first, 2 * d);
      EXPECT_EQ(r.positions[d].layers[1].first, 2 * (2 * K - 1 - d));
    }
  }
}

// The simulator's activation peak per device equals a direct replay of the memory rule
// over the device's op list (charge at start, free at the end of B or W): ops of one
// device never overlap, so the peak is the largest running sum at an op start.
TEST(ScheduleData, PeakActivationsFollowTheOpRules) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    RandomScheduleShape shape;
    shape.devices = 1 + static_cast<int>(rng() % 4);
    shape.stages = shape.devices * (1 + static_cast<int>(rng() % 2));
    shape.microbatches = 1 + static_cast<int>(rng() % 6);
    shape.r_ops = rng() % 2;
    const Schedule s = random_schedule(rng, shape);
    const PlannedSchedule u = setup_for(s, rng);
    const StepReport r = simulate(s, u.costs, u.hardware, {});
    for (int d = 0; d < s.positions(); ++d) {
      std::vector<int64_t> held(static_cast<std::size_t>(s.stages() * s.microbatches()), 0);
      int64_t now = 0, peak = 0;
      for (const Op& op : s.position_ops[d]) {
        const StageCost& c = u.costs.stages[op.stage];
        // Written out here rather than through op_charge_bytes: F stashes activations (or
        // the input under re-materialisation), R re-creates the activations.
        int64_t add = op.kind == OpKind::Forward ? (s.r_ops ? c.input_bytes : c.activation_bytes)
                                                 : op.kind == OpKind::Recompute ? c.activation_bytes : 0;
        int64_t& mine = held[op.stage * s.microbatches() + op.microbatch];
        mine += add, now += add;
        peak = std::max(peak, now);
        if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardWeight) now -= mine, mine = 0;
      }
      EXPECT_EQ(r.positions[d].peak_activation_bytes, peak) << "seed " << seed << " device " << d;
    }
  }
}

TEST(ScheduleData, RoundTripThroughWithRecomputeAddsOneRBeforeEachFirstBackward) {
  Schedule s = make_zb_h1(3, 5);
  Schedule r = with_recompute(s);
  EXPECT_TRUE(r.r_ops);
  EXPECT_EQ(r.num_ops(), s.num_ops() + 3u * 5u);  // one R per (stage, micro-batch)
  EXPECT_NO_THROW(validate_schedule(r));
  EXPECT_EQ(with_recompute(r).num_ops(), r.num_ops());  // already there: unchanged
}

namespace {

std::string refusal(const Schedule& s) {
  try {
    validate_schedule(s, "bad.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

Schedule two_devices() { return make_1f1b(2, 2); }

}  // namespace

TEST(ScheduleData, RefusesBadOrdersNamingTheOps) {
  {  // device 1 runs B1 before B0 while device 0 ... a cycle: device 0 waits F of device 1?
    Schedule s = two_devices();
    // Device 0: F0 F1 B0 B1. Put device 0's B0 before its F1 and device 1's F1 first:
    // device 1 waits for F1 of stage 0, which device 0 runs only after B0, which waits
    // for device 1's B0, which comes after F1 on device 1: a cycle of both devices.
    s.position_ops[0] = {{OpKind::Forward, 0, 0}, {OpKind::Backward, 0, 0}, {OpKind::Forward, 0, 1}, {OpKind::Backward, 0, 1}};
    s.position_ops[1] = {{OpKind::Forward, 1, 1}, {OpKind::Forward, 1, 0}, {OpKind::Backward, 1, 0}, {OpKind::Backward, 1, 1}};
    const std::string e = refusal(s);
    EXPECT_NE(e.find("bad.json: schedule cannot make progress"), std::string::npos) << e;
    EXPECT_NE(e.find("device 0 at B(stage 0, micro-batch 0) waits for stage 1 on device 1"), std::string::npos) << e;
    EXPECT_NE(e.find("device 1 at F(stage 1, micro-batch 1) waits for stage 0 on device 0"), std::string::npos) << e;
    EXPECT_NE(e.find("(a cycle)"), std::string::npos) << e;
  }
  {  // a missing op
    Schedule s = two_devices();
    s.position_ops[1].pop_back();
    EXPECT_NE(refusal(s).find("B(stage 1, micro-batch 1) is missing"), std::string::npos) << refusal(s);
  }
  {  // a duplicated op
    Schedule s = two_devices();
    s.position_ops[0].push_back(s.position_ops[0].front());
    EXPECT_NE(refusal(s).find("device 0, op 4: F(stage 0, micro-batch 0) appears twice"), std::string::npos)
        << refusal(s);
  }
  {  // an op on the wrong device
    Schedule s = two_devices();
    s.position_ops[0][0].stage = 1;
    EXPECT_NE(refusal(s).find("runs on device 0 but stage 1 lives on device 1"), std::string::npos) << refusal(s);
  }
  {  // a W without its I, and B mixed with I/W
    Schedule s = make_zb_h1(2, 2);
    for (auto& ops : s.position_ops) {
      std::erase_if(ops, [](const Op& op) { return op.kind == OpKind::BackwardInput && op.stage == 0 && op.microbatch == 1; });
    }
    EXPECT_NE(refusal(s).find("W(stage 0, micro-batch 1) has no I before it"), std::string::npos) << refusal(s);
    for (auto& op : s.position_ops[0]) {
      if (op.kind == OpKind::BackwardWeight && op.microbatch == 1) op.kind = OpKind::Backward;
    }
    EXPECT_NO_THROW(validate_schedule(s));  // stage 0, micro-batch 1 now runs a whole B: valid
  }
  {  // a W placed before its I on the same device can never run
    Schedule s = make_zb_h1(1, 1);
    std::swap(s.position_ops[0][1], s.position_ops[0][2]);  // F I W -> F W I
    EXPECT_NE(refusal(s).find("device 0 at W(stage 0, micro-batch 0) waits for stage 0 on device 0"),
              std::string::npos)
        << refusal(s);
  }
  {  // a device with no stage
    Schedule s = two_devices();
    s.position_ops.push_back({});
    EXPECT_NE(refusal(s).find("device 2 holds no stage"), std::string::npos) << refusal(s);
  }
}

// Each op's rules, with the number each rule gives (core/op_rules.h's table).
TEST(ScheduleData, OpRulesStateWhatEachOpNeedsSendsAndCharges) {
  auto needs = [](OpKind k, int stage, bool rc) {
    std::vector<std::pair<Product, int>> out;
    for (const Need& n : op_needs({k, stage, 0}, 4, rc)) out.emplace_back(n.product, n.stage);
    return out;
  };
  using P = Product;
  EXPECT_EQ(needs(OpKind::Forward, 0, false).size(), 0u);
  EXPECT_EQ(needs(OpKind::Forward, 2, false), (std::vector<std::pair<P, int>>{{P::Output, 1}}));
  EXPECT_EQ(needs(OpKind::BackwardInput, 3, true), (std::vector<std::pair<P, int>>{{P::Output, 3}, {P::Recomputed, 3}}));
  EXPECT_EQ(needs(OpKind::Backward, 1, false), (std::vector<std::pair<P, int>>{{P::Output, 1}, {P::InputGradient, 2}}));
  EXPECT_EQ(needs(OpKind::BackwardWeight, 1, false), (std::vector<std::pair<P, int>>{{P::InputGradient, 1}}));
  EXPECT_FALSE(op_sends({OpKind::Forward, 3, 0}, 4));
  EXPECT_EQ(op_sends({OpKind::Forward, 1, 0}, 4)->to_stage, 2);
  EXPECT_EQ(op_sends({OpKind::BackwardInput, 1, 0}, 4)->to_stage, 0);
  EXPECT_FALSE(op_sends({OpKind::BackwardWeight, 1, 0}, 4));
  EXPECT_EQ(op_receives({OpKind::Backward, 1, 0}, 4)->from_stage, 2);
  EXPECT_EQ(op_sends({OpKind::Backward, 2, 0}, 4)->cut(), 2);  // crosses the end of stage 1
  StageCost c;
  c.activation_bytes = 700, c.input_bytes = 30;
  EXPECT_EQ(op_charge_bytes(OpKind::Forward, c, false), 700);
  EXPECT_EQ(op_charge_bytes(OpKind::Forward, c, true), 30);
  EXPECT_EQ(op_charge_bytes(OpKind::Recompute, c, true), 700);
  EXPECT_EQ(op_charge_bytes(OpKind::BackwardInput, c, false), 0);
  EXPECT_TRUE(op_frees(OpKind::Backward));
  EXPECT_TRUE(op_frees(OpKind::BackwardWeight));
  EXPECT_FALSE(op_frees(OpKind::BackwardInput));
  // Adam's default: 1 weights + 1 gradients + 2 optimizer = 4 bytes per parameter byte.
  EXPECT_EQ(static_bytes(1000, 2.0), 4000);
  // Ring all-reduce of 1 GB over 4 devices at 100 GB/s and 5 us: 2 x 3/4 GB / 100 GB/s
  // = 15 ms, plus 2 x 3 x 5 us = 30 us.
  EXPECT_EQ(allreduce_ns(Link{100.0, 5.0}, 1'000'000'000, 4), 15'000'000 + 30'000);
}
