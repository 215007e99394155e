// Exact memory: for a profile measured by the executor's own profiler (so it
// has workspace_bytes), the predicted peak memory of every pipeline position equals the
// CPU executor's tracked peak byte for byte, transients and all, and so does each part
// of it (weights, gradients, optimizer state, peak activations, transients). Checked
// for every built-in schedule, with and without re-materialisation, K = 1..4, replicated
// positions (the all-reduce's flat gradient copy), V-shapes and random topological
// orders of the op graph (tests/support/random_schedules.h), over the threads transport.
#include <gtest/gtest.h>

#include <tuple>

#include <random>

#include "core/cost_model.h"
#include "core/error.h"
#include "exec/runtime/executor.h"
#include "exec/profiler/profiler.h"
#include "tests/support/exec_test_models.h"
#include "tests/support/test_support.h"
#include "planner/plan_builder.h"
#include "planner/stage_model.h"
#include "tests/support/random_schedules.h"
#include "sim/simulator.h"

namespace pipescope::exec {
namespace {

Profile measured_profile() { return test::tiny_gpt_measured_profile(); }

// Every memory number of every position, predicted against tracked; returns how many
// positions held transients (so that the property is not vacuous).
int expect_memory_equal(const StepReport& p, const StepReport& m, const std::string& label) {
  test::expect_same_position_memory(p, m, label);
  int with_transients = 0;
  for (const PositionReport& a : p.positions) {
    EXPECT_GT(a.weight_bytes, 0) << label;
    with_transients += a.transient_bytes > 0;
  }
  // The memory curves (timeline samples) reach the same peak.
  test::expect_curves_reach_the_peaks(p, label);
  test::expect_curves_reach_the_peaks(m, label);
  return with_transients;
}

StepReport predict(const Profile& profile, const Plan& plan, const Schedule& s) {
  int devices = 0;
  for (const PlanStage& st : plan.stages) {
    for (int d : st.devices) devices = std::max(devices, d + 1);
  }
  const Hardware hw = Hardware::ideal(devices);
  return simulate(s, build_cost_model(profile, plan, hw), hw);
}

RunResult run_once(const Profile& profile, const Plan& plan, const Schedule& s) {
  RunOptions o;
  o.steps = 1;
  return run_threads(profile, plan, s, o);
}

TEST(ExactMemory, ProfiledModelHasWorkspace) {
  const Profile profile = measured_profile();
  ASSERT_TRUE(profile.has_workspace());
  // The head linear [rows, 24] -> [rows, 8] at micro-batch 1 (sequence 4): its input is
  // 4 x 24 floats = 384 bytes, forward allocates only its output (4 x 8 x 4 = 128 bytes),
  // and backward_input keeps the output gradient (128 bytes) for backward_weight.
  const LayerWorkspace& head = profile.layers.back().workspace;
  EXPECT_EQ(head.input[0], 384);
  EXPECT_EQ(head.forward[0], 128);
  EXPECT_EQ(head.held_for_weight[0], 128);
  EXPECT_EQ(head.backward_weight[0], 0);
}

// What W still needs after I, measured (core/op_rules.h's weight_grad_bytes) at
// micro-batch 1, sequence 4 (rows = 4, 4 bytes per float):
//   head linear 24 -> 8: stashes its input, 4 x 24 x 4 = 384 bytes, and W reads it all;
//   gelu (24 features): stashes its input (384) and W (it has none) reads nothing: 0;
//   mlp block (hidden 16, ffn 32): LayerNorm x 256 + mean 16 + rstd 16, fc1's input 256,
//   GELU's input 512, fc2's input 512 = 1568 kept; W reads all but GELU's: 1056.
TEST(ExactMemory, ProfiledModelHasWeightGradBytes) {
  const Profile profile = measured_profile();
  ASSERT_TRUE(profile.has_weight_grad_bytes());
  const LayerProfile& head = profile.layers[7];
  EXPECT_EQ(head.activation_bytes[0], 384);
  EXPECT_EQ(head.weight_grad_bytes[0], 384);
  const LayerProfile& gelu = profile.layers[6];
  EXPECT_EQ(gelu.activation_bytes[0], 384);
  EXPECT_EQ(gelu.weight_grad_bytes[0], 0);
  const LayerProfile& mlp = profile.layers[1];
  EXPECT_EQ(mlp.activation_bytes[0], 1568);
  EXPECT_EQ(mlp.weight_grad_bytes[0], 1056);
}

// I frees for real on the executor. ZB-H1 and ZB-H2 (K = 2) peak at their warm-up,
// before any I, so for them the release changes no peak but every memory number must
// still agree; on one device running F I F I F I W W W over all 8 layers, F2 starts
// holding two micro-batches past their I, so the peak activations are
// 3 S - 2 (S - W_need) = S + 2 W_need (S: the stash, W_need: its weight_grad_bytes), below the 3 S
// the same profile without weight_grad_bytes predicts; tracked equals predicted.
TEST(ExactMemory, IFreesWhatWDoesNotNeed) {
  const Profile profile = measured_profile();
  Profile whole_stash = profile;
  for (LayerProfile& l : whole_stash.layers) l.weight_grad_bytes.clear();
  for (auto [kind, M] : {std::pair{ScheduleKind::ZeroBubbleH1, 4}, std::pair{ScheduleKind::ZeroBubbleH2, 6}}) {
    PlanChoice choice;
    choice.stages = 2;
    choice.microbatches = M;
    choice.microbatch_size = 2;
    choice.schedule = kind;
    choice.partition = PartitionKind::Uniform;
    const Plan plan = make_plan(profile, choice).plan;
    const Schedule s = schedule_for(plan);
    expect_memory_equal(predict(profile, plan, s), run_once(profile, plan, s).report, to_string(kind) + " with weight_grad_bytes");
  }
  Schedule one = testing::deferred_weight_order();
  Plan plan;
  plan.microbatches = 3;
  plan.batch_size = 6;
  plan.stages = {{0, profile.num_layers(), {0}}};
  int64_t S = 0, need = 0;
  for (int l = 0; l < profile.num_layers(); ++l) S += profile.activation_bytes(l, 2), need += profile.weight_grad_bytes(l, 2);
  const StepReport freed = predict(profile, plan, one);
  EXPECT_EQ(freed.positions[0].peak_activation_bytes, S + 2 * need);
  EXPECT_EQ(predict(whole_stash, plan, one).positions[0].peak_activation_bytes, 3 * S);
  EXPECT_LT(need, S);
  expect_memory_equal(freed, run_once(profile, plan, one).report, "F I F I F I W W W with weight_grad_bytes");
}

TEST(ExactMemory, EveryBuiltInScheduleKOneToFour) {
  const Profile profile = measured_profile();
  int runs = 0, with_transients = 0;
  for (ScheduleKind kind : schedule_kinds()) {
    for (int K = 1; K <= 4; ++K) {
      for (bool rc : {false, true}) {
        PlanChoice choice;
        choice.stages = K;
        choice.microbatches = 2 * K;
        choice.microbatch_size = 3;  // past the profiled sizes: the extrapolation must stay exact
        choice.schedule = kind;
        choice.recompute = recompute_from_r_ops(rc);
        choice.partition = PartitionKind::Uniform;
        // One chunk per position, or two (interleaved, V-shapes) when the generator asks for them.
        Plan plan;
        Schedule s;
        bool built = false;
        for (int chunks : {kind == ScheduleKind::Interleaved && K > 1 ? 2 : 1, 2}) {
          if (built) continue;
          choice.chunks = chunks;
          try {
            plan = make_plan(profile, choice).plan;
            s = schedule_for(plan);
            built = true;
          } catch (const InputError&) {
          }
        }
        if (!built) continue;  // a generator that refuses this K (its own rule)
        const std::string label = to_string(kind) + " K=" + std::to_string(K) + (rc ? " recompute" : "");
        with_transients += expect_memory_equal(predict(profile, plan, s), run_once(profile, plan, s).report, label);
        ++runs;
      }
    }
  }
  EXPECT_GE(runs, 32);  // 4 generators at least (gpipe, 1f1b, interleaved, zb-h1) x K 1..4 x recompute
  EXPECT_GT(with_transients, runs);  // most positions' peaks hold transients
}

TEST(ExactMemory, ReplicatedPositionsCountTheAllReduceBuffer) {
  const Profile profile = measured_profile();
  for (ScheduleKind kind : {ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1}) {
    for (int K : {1, 2}) {
      PlanChoice choice;
      choice.stages = K;
      choice.replicas = 2;
      choice.microbatches = 4;
      choice.microbatch_size = 2;
      choice.schedule = kind;
      choice.partition = PartitionKind::Uniform;
      const Plan plan = make_plan(profile, choice).plan;
      const Schedule s = schedule_for(plan);
      expect_memory_equal(predict(profile, plan, s), run_once(profile, plan, s).report,
                          to_string(kind) + " K=" + std::to_string(K) + " r=2");
    }
  }
  // K = 1, M = 1 with one layer-less step: at the all-reduce the device holds the static
  // bytes and the flat gradient copy, which is more than any op adds for this model.
  PlanChoice one;
  one.stages = 1;
  one.replicas = 2;
  one.microbatches = 1;
  one.microbatch_size = 2;
  one.partition = PartitionKind::Uniform;
  const Plan plan = make_plan(profile, one).plan;
  const StepReport p = predict(profile, plan, schedule_for(plan));
  EXPECT_EQ(p.positions[0].peak_memory_bytes, p.positions[0].static_bytes + p.positions[0].gradient_bytes)
      << "the all-reduce's flat copy of the gradients is the peak";
}

// The tiny GPT's 8 layers cut evenly into the schedule's stages (S divides 8).
Plan plan_for(const Profile& profile, const Schedule& s) {
  Plan plan;
  plan.microbatches = s.microbatches();
  plan.batch_size = 2 * static_cast<int64_t>(s.microbatches());
  plan.recompute = recompute_from_r_ops(s.r_ops);
  plan.chunks = s.stages() / s.positions();
  const int per = profile.num_layers() / s.stages();
  LayerRanges ranges;
  for (int st = 0; st < s.stages(); ++st) ranges.emplace_back(st * per, (st + 1) * per);
  place_stages(plan, s, ranges, 1);
  return plan;
}

TEST(ExactMemory, RandomOrdersAndVShapes) {
  const Profile profile = measured_profile();
  int runs = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    testing::RandomScheduleShape shape;
    shape.devices = seed % 2 ? 2 : 4;
    shape.stages = 2 * shape.devices;
    shape.microbatches = 1 + static_cast<int>(rng() % 4);
    shape.r_ops = seed % 3 == 0;
    std::vector<int> map = testing::v_shape_map(shape.devices);
    if (seed % 4 >= 2) {  // a looped (interleaved) map instead of the V
      for (int st = 0; st < shape.stages; ++st) map[st] = st % shape.devices;
    }
    const Schedule s = testing::random_schedule(rng, shape, map);
    const Plan plan = plan_for(profile, s);
    expect_memory_equal(predict(profile, plan, s), run_once(profile, plan, s).report,
                        "random order seed " + std::to_string(seed));
    ++runs;
  }
  EXPECT_EQ(runs, 20);
}

// Random orders where most or all backwards are split (I then W), on random stage maps
// (stage s < K on device s, the others anywhere), K = 2 or 4, one or two stages per
// device: with the profile's weight_grad_bytes every I frees what its W does not need and
// the tracked peaks equal the prediction; and the freeing shows, since for most seeds the
// predicted activation peak of some position is below that of the same profile without
// weight_grad_bytes (the whole stash kept until W).
TEST(ExactMemory, RandomSplitOrdersFreeAtI) {
  const Profile profile = measured_profile();
  ASSERT_TRUE(profile.has_weight_grad_bytes());
  Profile whole = profile;
  for (LayerProfile& l : whole.layers) l.weight_grad_bytes.clear();
  int runs = 0, lower = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(seed);
    testing::RandomScheduleShape shape;
    shape.devices = seed % 2 ? 2 : 4;
    shape.stages = shape.devices * (seed % 3 == 0 ? 2 : 1);  // divides the 8 layers
    shape.microbatches = 1 + static_cast<int>(rng() % 4);
    shape.r_ops = seed % 5 == 0;
    shape.split_share = seed % 4 == 0 ? 0.7 : 1.0;
    const Schedule s = testing::random_schedule(rng, shape);
    const Plan plan = plan_for(profile, s);
    const StepReport predicted = predict(profile, plan, s);
    const std::string label = "random split order seed " + std::to_string(seed);
    expect_memory_equal(predicted, run_once(profile, plan, s).report, label);
    const StepReport kept = predict(whole, plan, s);
    bool below = false;
    for (std::size_t d = 0; d < predicted.positions.size(); ++d) {
      EXPECT_LE(predicted.positions[d].peak_activation_bytes, kept.positions[d].peak_activation_bytes) << label;
      below = below || predicted.positions[d].peak_activation_bytes < kept.positions[d].peak_activation_bytes;
    }
    lower += below;
    ++runs;
  }
  EXPECT_EQ(runs, 24);
  EXPECT_GE(lower, 12) << "I freed nothing that mattered in most seeds: the property would be vacuous";
}

// Post-validation runs 3 steps back to back (a position may start step t + 1 while
// another finishes step t): the tracked peaks over the run equal the simulator's over
// the same 3 steps as one op list, I freeing included.
TEST(ExactMemory, PostValidationStepsBackToBack) {
  const Profile profile = measured_profile();
  for (const auto& [kind, K, M] : {std::tuple{ScheduleKind::ZeroBubbleH1, 2, 4}, std::tuple{ScheduleKind::ZeroBubbleV, 2, 4},
                                   std::tuple{ScheduleKind::OneFOneB, 4, 6}, std::tuple{ScheduleKind::ZeroBubbleH2, 2, 3}}) {
    const Plan plan = test::uniform_plan(profile, kind, K, M, 2);
    const Schedule s = schedule_for(plan);
    const Hardware hw = Hardware::ideal(K);
    SimOptions so;
    so.steps = 3;
    so.optimizer_step = OptimizerStep::PostValidation;
    RunOptions o;
    o.steps = 3;
    o.optimizer_step = OptimizerStep::PostValidation;
    expect_memory_equal(simulate(s, build_cost_model(profile, plan, hw), hw, so), run_threads(profile, plan, s, o).report,
                        to_string(kind) + " post-validation, 3 steps");
  }
}

// The planner's stage model predicts the same total peak as the simulator for a profile
// with workspace_bytes (one stage per device: where the stage model is exact).
TEST(ExactMemory, PlannerStageModelCountsTheSameTransients) {
  const Profile profile = measured_profile();
  int checked = 0;
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1}) {
    for (int K : {1, 2, 4}) {
      for (int r : {1, 2}) {
        for (bool rc : {false, true}) {
          Schedule s = make_schedule({kind, K, 2 * K, 1, rc});
          StageModelSpec spec;
          spec.microbatch_size = 2 * r;
          spec.replicas = r;
          spec.constrain_memory = false;
          const StageModel m(profile, Hardware::ideal(K * r), s, spec);
          const LayerRanges ranges = uniform_partition(profile.num_layers(), K);
          Plan plan;
          plan.microbatches = s.microbatches();
          plan.batch_size = static_cast<int64_t>(spec.microbatch_size) * s.microbatches();
          plan.recompute = recompute_from_r_ops(rc);
          place_stages(plan, s, ranges, r);
          const std::vector<int64_t> model = m.stage_memory(ranges);
          const StepReport p = predict(profile, plan, s);
          for (int st = 0; st < K; ++st) {
            EXPECT_EQ(model[st], p.positions[st].peak_memory_bytes)
                << to_string(kind) << " K=" << K << " r=" << r << (rc ? " recompute" : "") << " stage " << st;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 3 * 7 * 2 * 2);
}

// Without workspace_bytes a prediction counts the stash only, and says so.
TEST(ExactMemory, WithoutWorkspaceTheNotesSayTransientsAreNotCounted) {
  Profile profile = measured_profile();
  for (LayerProfile& l : profile.layers) l.workspace = LayerWorkspace{};
  PlanChoice choice;
  choice.stages = 2;
  choice.microbatches = 4;
  choice.microbatch_size = 2;
  choice.partition = PartitionKind::Uniform;
  const Plan plan = make_plan(profile, choice).plan;
  const StepReport p = predict(profile, plan, schedule_for(plan));
  for (const PositionReport& st : p.positions) {
    EXPECT_EQ(st.transient_bytes, 0);
    EXPECT_EQ(st.peak_memory_bytes, st.static_bytes + st.peak_activation_bytes);
  }
  bool said = false;
  for (const std::string& n : p.notes) said |= n.find("transients are not counted") != std::string::npos;
  EXPECT_TRUE(said);
}

}  // namespace
}  // namespace pipescope::exec
