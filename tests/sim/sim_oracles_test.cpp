// The simulator against closed forms (GPipe paper, Megatron-LM, zero-bubble paper)
// and against itself (determinism). Uniform stages and free communication unless said.
#include <gtest/gtest.h>

#include <random>

#include "interop/synth_profile.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"
#include "tests/support/test_support.h"

using namespace pipescope;
using pipescope::testing::uniform_costs;

namespace {
StepReport run(const Schedule& s, const CostModel& c, bool timeline = false) {
  SimOptions o;
  o.record_timeline = timeline;
  return simulate(s, c, Hardware::ideal(s.positions()), o);
}
}  // namespace

TEST(SimOracle, GPipeAnd1F1BStepAndBubbleMatchTheClosedForm) {
  // step = (M + K - 1)(t_f + t_b), bubble = (K - 1) / (M + K - 1), exactly.
  std::mt19937_64 rng(2024);
  for (int trial = 0; trial < 200; ++trial) {
    const int K = 1 + rng() % 16, M = 1 + rng() % 64;
    const int64_t tf = 1 + rng() % 5000, tb = 1 + rng() % 9000;
    CostModel c = uniform_costs(K, K, tf, tb);
    for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
      StepReport r = run(make_schedule({kind, K, M}), c);
      EXPECT_EQ(r.step_ns, (M + K - 1) * (tf + tb)) << "trial " << trial << " K=" << K << " M=" << M;
      EXPECT_NEAR(r.bubble_fraction, double(K - 1) / (M + K - 1), 1e-9) << "trial " << trial;
    }
  }
}

TEST(SimOracle, InterleavedBubbleIsKMinus1OverVMPlusKMinus1) {
  // v chunks per device, each chunk t/v: bubble (K - 1) / (v M + K - 1) (Megatron-LM).
  for (int K : {2, 4, 8}) {
    for (int v : {1, 2, 3, 4}) {
      for (int mult : {1, 2, 4, 8}) {
        const int M = K * mult;
        CostModel c = uniform_costs(K * v, K, 1200 / v, 2400 / v);
        StepReport r = run(make_interleaved(K, M, v), c);
        EXPECT_NEAR(r.bubble_fraction, double(K - 1) / (v * M + K - 1), 1e-9)
            << "K=" << K << " v=" << v << " M=" << M;
      }
    }
  }
}

TEST(SimOracle, ZeroBubbleH1CutsTheBubbleToAThirdWithEqualFBW) {
  // With T_F = T_B = T_W = T the ZB-H1 step is (3M + K - 1) T: the bubble
  // (K - 1) / (3M + K - 1) is about a third of 1F1B's (Qi et al., ICLR 2024).
  for (int K : {2, 3, 4, 8}) {
    for (int M : {K, 2 * K, 8 * K}) {
      CostModel c = uniform_costs(K, K, 1000, 2000);  // B and W 1000 each
      StepReport zb = run(make_zb_h1(K, M), c);
      EXPECT_EQ(zb.step_ns, (3 * M + K - 1) * 1000) << "K=" << K << " M=" << M;
      EXPECT_NEAR(zb.bubble_fraction, double(K - 1) / (3 * M + K - 1), 1e-9);
      StepReport one = run(make_1f1b(K, M), c);
      EXPECT_LT(zb.bubble_fraction, one.bubble_fraction);
      // Activation memory: no stage above 1F1B's first stage.
      EXPECT_LE(zb.positions[K - 1].peak_activation_bytes, one.positions[0].peak_activation_bytes);
    }
  }
}

TEST(SimOracle, ActivationsInFlightAreMinKMinusSAndMFor1F1BAndMForGPipe) {
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 100; ++trial) {
    const int K = 1 + rng() % 8, M = 1 + rng() % 20;
    const int64_t act = 1 + rng() % 100000;
    CostModel c = uniform_costs(K, K, 10 + rng() % 100, 10 + rng() % 100, act);
    StepReport one = run(make_1f1b(K, M), c);
    StepReport gp = run(make_gpipe(K, M), c);
    for (int s = 0; s < K; ++s) {
      EXPECT_EQ(one.positions[s].peak_activation_bytes, std::min(K - s, M) * act) << "trial " << trial;
      EXPECT_EQ(gp.positions[s].peak_activation_bytes, M * act) << "trial " << trial;
    }
  }
}

TEST(SimOracle, RecomputeFollowsGPipesActivationBound) {
  // GPipe with re-materialisation keeps each micro-batch's stage input (N/M samples
  // per boundary, M of them: O(N)) plus one micro-batch's recomputed activations
  // (O((L/K)(N/M))): M * input + act instead of M * act. It costs one more forward
  // per micro-batch, except that each stage's recompute overlaps its wait for the
  // gradient during the drain: step = M (2 t_f + t_b) + (K - 1)(t_f + t_b).
  const int K = 4, M = 8;
  const int64_t act = 1 << 20, input = 1 << 12, tf = 100, tb = 200;
  CostModel c = uniform_costs(K, K, tf, tb, act, input);
  StepReport plain = run(make_gpipe(K, M), c);
  StepReport rc = run(make_gpipe(K, M, true), c);
  for (int s = 1; s < K; ++s) {
    EXPECT_EQ(plain.positions[s].peak_activation_bytes, M * act);
    EXPECT_EQ(rc.positions[s].peak_activation_bytes, M * input + act);
  }
  EXPECT_EQ(rc.positions[0].peak_activation_bytes, act);  // stage 0's input is the data
  EXPECT_EQ(rc.step_ns, M * (2 * tf + tb) + (K - 1) * (tf + tb));
}

TEST(SimOracle, CommunicationAddsLatencyAndSerialisesOnALink) {
  // Two stages, M micro-batches, transfers of 1e6 bytes at 1 GB/s (1 ms busy) +
  // 1 us latency; compute 0.1 ms forward / 0.1 ms backward. The link is the
  // bottleneck: forwards arrive at stage 1 every 1 ms.
  const int M = 4;
  CostModel c = uniform_costs(2, 2, 100000, 100000, 10, 1000000);
  Hardware h = Hardware::ideal(2);
  h.link = {1.0, 1.0};
  StepReport r = simulate(make_gpipe(2, M), c, h, {});
  // Forwards queue on link 0->1 one per ms: the last reaches stage 1 at
  // 0.1 + 4 x 1 ms + 1 us. Stage 1 runs that F, then B0; gradients queue on link
  // 1->0 one per ms, the last arrives 4 ms + 1 us after B0 ends; stage 0 runs B3.
  const int64_t last_fwd_arrives = 100000 + M * 1000000 + 1000;
  const int64_t stage1_b0_done = last_fwd_arrives + 100000 + 100000;
  const int64_t last_grad_arrives = stage1_b0_done + M * 1000000 + 1000;
  EXPECT_EQ(r.step_ns, last_grad_arrives + 100000);
}

TEST(SimOracle, SameInputGivesByteIdenticalJsonAndTrace) {
  Profile p = make_gpt_profile(GptSpec{});
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
                    ScheduleKind::ZeroBubbleH1}) {
    PlanChoice choice;
    choice.stages = 4;
    choice.microbatches = 8;
    choice.schedule = kind;
    choice.chunks = kind == ScheduleKind::Interleaved ? 2 : 1;
    Plan plan = make_plan(p, choice).plan;
    Hardware h = Hardware::ideal(4);
    h.link = {450, 5};
    std::string first_json, first_trace;
    for (int i = 0; i < 2; ++i) {
      CostModel c = build_cost_model(p, plan, h);
      StepReport r = simulate(schedule_for(plan), c, h, {});
      std::string json = report_to_json(r).dump(2), trace = chrome_trace(r);
      if (i == 0) {
        first_json = json;
        first_trace = trace;
      } else {
        EXPECT_EQ(json, first_json) << to_string(kind);
        EXPECT_EQ(trace, first_trace) << to_string(kind);
      }
    }
  }
}
