// The memory rules of core/op_rules.h on hand-built layers (every number worked out in
// the comments), and the profile's optional workspace_bytes: read, written back, and
// refused with the file, the JSON path and the expectation when malformed.
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/op_rules.h"
#include "core/profile.h"
#include "interop/synth_profile.h"
#include "sim/simulator.h"
#include "tests/support/test_support.h"

namespace pipescope {
namespace {

// Two layers: {input, output, activation, forward, forward_no_grad, backward_input,
// backward_weight, held_for_weight}.
const std::vector<LayerBytes> kLayers = {{10, 20, 30, 45, 22, 15, 3, 20}, {20, 8, 40, 30, 9, 11, 5, 8}};

void expect_op(const StageMemory& m, OpKind k, int64_t peak, int64_t held, const char* what) {
  EXPECT_EQ(m.of(k).peak, peak) << what << " " << to_string(k);
  EXPECT_EQ(m.of(k).held, held) << what << " " << to_string(k);
}

TEST(MemoryRules, MiddleStageAddsLayersUpInTheExecutorsOrder) {
  const StageMemory m = stage_memory(kLayers, false, false, false);
  // F: layer 0 starts holding its input 10 and adds 45 (55); layer 1 starts with layer 0's
  // stash 30 + its input 20 and adds 30 (80); then stash 70 + output 8 = 78. Holds 70.
  expect_op(m, OpKind::Forward, 80, 70, "middle");
  // R: the same forward on a fresh copy of the input.
  expect_op(m, OpKind::Recompute, 80, 70, "middle");
  // B: layer 1: received gradient 8 + 11 = 19, then its input gradient 20 + held 8 + 5 = 33;
  // layer 0: 20 + 15 = 35, then 10 + 20 + 3 = 33. Frees everything.
  expect_op(m, OpKind::Backward, 35, 0, "middle");
  // I: layer 1: 8 + 11 = 19, keeps 8, 8 + 20 = 28; layer 0: 8 + 20 + 15 = 43, keeps 28.
  expect_op(m, OpKind::BackwardInput, 43, 28, "middle");
  // W: layer 0 adds 3 before freeing its 20; layer 1 adds 5 after 20 are gone.
  expect_op(m, OpKind::BackwardWeight, 3, 0, "middle");
}

TEST(MemoryRules, LastStageHoldsTheLossGradientFromFToItsBackward) {
  const StageMemory m = stage_memory(kLayers, false, true, false);
  // F: after the stash 70 and output 8, the loss adds its target and gradient (8 each): 94;
  // the gradient (8) stays. B and I start from it, so they add 8 less.
  expect_op(m, OpKind::Forward, 94, 78, "last");
  expect_op(m, OpKind::Backward, 27, 0, "last");
  expect_op(m, OpKind::BackwardInput, 35, 20, "last");
}

TEST(MemoryRules, RecomputeKeepsOnlyTheStageInput) {
  // Middle stage: F keeps its input 10; layer 0 runs on it (10 + 22), layer 1 holds it
  // beside its own input (10 + 20 + 9 = 39); R then holds the activations.
  const StageMemory m = stage_memory(kLayers, false, false, true);
  expect_op(m, OpKind::Forward, 39, 10, "recompute");
  expect_op(m, OpKind::Recompute, 80, 70, "recompute");
  // First stage: the data is not kept (32, then 20 + 9 = 29).
  expect_op(stage_memory(kLayers, true, false, true), OpKind::Forward, 32, 0, "recompute, first stage");
}

TEST(MemoryRules, AllReduceBufferOnlyWhenReplicated) {
  EXPECT_EQ(allreduce_buffer_bytes(1000, 1), 0);
  EXPECT_EQ(allreduce_buffer_bytes(1000, 4), 1000);
}

const char* kProfile = R"({
  "format": "pipescope.profile", "version": 1, "model": "m",
  "device": {"name": "d", "memory_bytes": 1000}, "backend": "cpu", "dtype": "fp32",
  "batch_sizes": [1, 2],
  "layers": [{"name": "a", "forward_ms": [1, 2], "backward_ms": [2, 4],
              "activation_bytes": [10, 20], "output_bytes": [5, 10], "parameter_bytes": 7,
              "workspace_bytes": {"input": [4, 8], "forward": [6, 12], "forward_no_grad": [5, 10],
                                  "backward_input": [9, 18], "backward_weight": [0, 0],
                                  "held_for_weight": [5, 10]}}]
})";

Profile parse(const std::string& text) { return testing::parse_profile_text(text); }

TEST(WorkspaceBytes, ReadsAndWritesBack) {
  const Profile p = parse(kProfile);
  ASSERT_TRUE(p.has_workspace());
  EXPECT_EQ(p.layers[0].workspace.backward_input, (std::vector<double>{9, 18}));
  const Profile q = profile_from_json(JsonReader::from_text(profile_to_json(p).dump(), "rt"));
  EXPECT_EQ(profile_to_json(p), profile_to_json(q));
}

TEST(WorkspaceBytes, MalformedFieldsNameFilePathAndExpectation) {
  struct Bad {
    std::string from, to, expect;
  };
  const std::vector<Bad> cases = {
      {"\"forward\": [6, 12]", "\"forward\": [6]",
       "p.json: layers[0].workspace_bytes.forward: expected 2 values (one per batch_sizes entry), got 1"},
      {"\"held_for_weight\": [5, 10]", "\"held_for_weight\": [5, -1]",
       "p.json: layers[0].workspace_bytes.held_for_weight[1]: expected a number >= 0"},
      {"\"input\": [4, 8], ", "", "p.json: layers[0].workspace_bytes.input: missing required field"},
      {"\"backward_weight\": [0, 0]", "\"backward_weight\": [0, 1e300]",
       "p.json: layers[0].workspace_bytes.backward_weight[1]: value is implausibly large"},
  };
  for (const Bad& c : cases) {
    const std::string err = testing::profile_error(testing::replaced(kProfile, c.from, c.to));
    EXPECT_NE(err.find(c.expect), std::string::npos) << "got: " << err << "\nexpected: " << c.expect;
  }
  std::string text = kProfile;
  const std::string obj = text.substr(text.find("{\"input\""), text.find("}}]") + 1 - text.find("{\"input\""));
  const std::string err = testing::profile_error(testing::replaced(text, obj, "[1, 2]"));
  EXPECT_NE(err.find("p.json: layers[0].workspace_bytes: expected an object"), std::string::npos) << err;
}

// Transients count toward the int64 limits of core/cost_model.h: six workspace values
// of 2^50 bytes over M = 4096 micro-batches is 2.8e19 bytes > 2^62, refused naming the stage.
TEST(WorkspaceBytes, CountTowardTheDeviceByteLimit) {
  std::string text = kProfile;
  for (const char* key : {"\"input\": [4, 8]", "\"forward\": [6, 12]", "\"forward_no_grad\": [5, 10]",
                          "\"backward_input\": [9, 18]", "\"backward_weight\": [0, 0]", "\"held_for_weight\": [5, 10]"}) {
    std::string k = key;
    const std::string name = k.substr(0, k.find(':') + 1);
    text.replace(text.find(k), k.size(), name + " [1125899906842624, 1125899906842624]");
  }
  const Profile profile = parse(text);
  Plan plan;
  plan.source = "plan.json";
  plan.microbatches = 4096;
  plan.batch_size = 4096;
  plan.stages = {{0, 1, {0}}};
  std::string err;
  try {
    build_cost_model(profile, plan, Hardware::ideal(1));
  } catch (const InputError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("plan.json: stages[0]: device 0 would hold"), std::string::npos) << err;
}

// The optimizer step ends each device's step: K = 2 uniform stages of 2 layers (forward
// 1 ms, backward 2 ms per layer), M = 1, optimizer 0.25 ms per layer. 1F1B's step is
// (M + K - 1)(t_f + t_b) = 2 x (2 + 4) = 12 ms; device 0's optimizer (0.5 ms) ends it at 12.5 ms.
TEST(OptimizerStep, EndsTheStepAndIsDrawnOnTheDevicesTrack) {
  UniformSpec u;
  u.layers = 4;
  u.forward_ms = 1;
  u.backward_ms = 2;
  u.batch_sizes = {1};
  Profile profile = make_uniform_profile(u);
  for (LayerProfile& l : profile.layers) l.optimizer_ms = 0.25;
  Plan plan;
  plan.microbatches = 1;
  plan.batch_size = 1;
  plan.stages = {{0, 2, {0}}, {2, 4, {1}}};
  const Hardware hw = Hardware::ideal(2);
  const StepReport r = simulate(make_1f1b(2, 1), build_cost_model(profile, plan, hw), hw);
  EXPECT_EQ(r.step_ns, 12'500'000);
  int drawn = 0;
  for (const TimelineEvent& e : r.timeline.events) drawn += e.category == "optimizer" && e.duration_ns == 500'000;
  EXPECT_EQ(drawn, 2);
  // Without optimizer_ms the step ends with the last backward.
  for (LayerProfile& l : profile.layers) l.optimizer_ms = -1;
  EXPECT_EQ(simulate(make_1f1b(2, 1), build_cost_model(profile, plan, hw), hw).step_ns, 12'000'000);
}

TEST(OptimizerStep, ProfileFieldIsReadAndChecked) {
  std::string text = kProfile;
  text.replace(text.find("\"parameter_bytes\": 7"), 20, "\"parameter_bytes\": 7, \"optimizer_ms\": 0.5");
  EXPECT_DOUBLE_EQ(parse(text).layers[0].optimizer_ms, 0.5);
  EXPECT_TRUE(parse(text).has_optimizer_time());
  EXPECT_FALSE(parse(kProfile).has_optimizer_time());
  text.replace(text.find("0.5"), 3, "-1");
  std::string err;
  try {
    parse(text);
  } catch (const InputError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("p.json: layers[0].optimizer_ms: expected a number >= 0"), std::string::npos) << err;
}

}  // namespace
}  // namespace pipescope
