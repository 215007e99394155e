// The model graph: Boost.Graph topological order, cycles refused with one named,
// bytes crossing each cut (a skip edge charged once per crossed boundary), and the
// optimal partitioner on PipeDream's real GPU profiles against PipeDream's optimizer.
#include <gtest/gtest.h>

#include <random>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/schedule.h"
#include "planner/model_graph.h"
#include "planner/stage_model.h"
#include "tests/planner/planner_test_util.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

TEST(ModelGraph, TopologicalOrderOfASortedListIsTheIdentity) {
  EXPECT_EQ(topological_order(4, {{0, 1}, {1, 2}, {0, 3}, {2, 3}}, "m.json"), (std::vector<int>{0, 1, 2, 3}));
}

TEST(ModelGraph, OrdersAnUnsortedGraphAndRenumbersItsProfile) {
  // 2 -> 0 -> 1 and 2 -> 1: the only order is 2, 0, 1.
  EXPECT_EQ(topological_order(3, {{2, 0}, {0, 1}, {2, 1}}, "m.json"), (std::vector<int>{2, 0, 1}));
  std::mt19937_64 rng(3);
  Profile p = testing::random_profile(rng, 3, false);
  p.edges = {{2, 0}, {0, 1}, {2, 1}};
  const Profile q = in_topological_order(p);
  EXPECT_EQ(q.layers[0].name, "layer.2");
  EXPECT_EQ(q.layers[1].name, "layer.0");
  EXPECT_EQ(q.edges, (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 2}}));
}

TEST(ModelGraph, RefusesACycleAndNamesIt) {
  try {
    topological_order(5, {{0, 1}, {1, 2}, {2, 3}, {3, 1}, {3, 4}}, "model.json");
    FAIL() << "a cycle was accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "model.json: edges: the model graph has a cycle: 1 -> 2 -> 3 -> 1");
  }
}

TEST(ModelGraph, ASkipEdgeIsChargedOncePerCrossedCut) {
  // 0 -> 1 -> 2 -> 3 plus skip 0 -> 3: layer 0's output (1000 bytes at batch 1) crosses
  // cuts 1, 2 and 3; layer 1's (2000) crosses cut 2 only; layer 2's (3000) cut 3.
  Profile p;
  p.batch_sizes = {1};
  for (int l = 0; l < 4; ++l) {
    LayerProfile layer;
    layer.forward_ms = layer.backward_ms = {1.0};
    layer.activation_bytes = {1.0};
    layer.output_bytes = {1000.0 * (l + 1)};
    p.layers.push_back(layer);
  }
  p.edges = {{0, 1}, {1, 2}, {2, 3}, {0, 3}};
  EXPECT_EQ(cut_bytes(p, 1.0), (std::vector<int64_t>{0, 1000, 1000 + 2000, 1000 + 3000, 0}));
}

TEST(ModelGraph, CutBytesEqualCoreBoundaryBytesOnRandomGraphs) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const Profile p = testing::random_profile(rng, 2 + static_cast<int>(rng() % 12), true);
    const std::vector<int64_t> bytes = cut_bytes(p, 3.0);
    for (int c = 0; c <= p.num_layers(); ++c) EXPECT_EQ(bytes[c], boundary_bytes(p, c, 3.0)) << "cut " << c;
  }
}

std::string pipedream_profile(const std::string& name) {
  return std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/pipedream/" + name + ".json";
}

// PipeDream's optimizer (straight pipeline, free communication) reports these slowest
// stages (ms) for K = 2, 4, 8 (profiles/pipedream/README.md). It is exact over chains of
// downsets, and contiguous cuts of one topological order are such chains, so the exact
// contiguous optimum (written beside) can only equal or trail it: resnet18 at K = 8 in
// the shipped order trails it (37.093 against 35.207 ms), which is why graph profiles
// go to the downset partitioner (planner_pipedream_test.cpp).
struct PipeDreamCase {
  std::string model;
  int stages;
  double pipedream_ms;
  double ours_ms;
};

void PrintTo(const PipeDreamCase& c, std::ostream* os) { *os << c.model << " K=" << c.stages; }

class PipeDreamProfiles : public ::testing::TestWithParam<PipeDreamCase> {};

TEST_P(PipeDreamProfiles, ContiguousOptimumNeverBeatsPipeDreamsExactOne) {
  const PipeDreamCase& c = GetParam();
  const std::string path = pipedream_profile(c.model);
  const Profile p = load_profile(path);
  const Hardware ideal = Hardware::ideal(c.stages);
  const Schedule schedule = make_schedule({ScheduleKind::OneFOneB, c.stages, 1, 1, false});
  StageModelSpec spec;
  spec.microbatch_size = p.batch_sizes.front();  // the batch PipeDream profiled
  const MinMaxResult best = optimal_partition(StageModel(p, ideal, schedule, spec));
  const double got_ms = static_cast<double>(best.value) / 1e6;
  EXPECT_GE(got_ms, c.pipedream_ms - 1e-6);
  EXPECT_NEAR(got_ms, c.ours_ms, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(
    Real, PipeDreamProfiles,
    ::testing::Values(PipeDreamCase{"vgg16", 2, 370.931, 370.931}, PipeDreamCase{"vgg16", 4, 216.450, 216.450},
                      PipeDreamCase{"vgg16", 8, 159.531, 159.531}, PipeDreamCase{"resnet18", 2, 130.199, 130.199},
                      PipeDreamCase{"resnet18", 4, 69.523, 69.523}, PipeDreamCase{"resnet18", 8, 35.207, 37.093},
                      PipeDreamCase{"gnmt", 2, 45.936, 45.936}, PipeDreamCase{"gnmt", 4, 25.868, 25.868},
                      PipeDreamCase{"gnmt", 8, 19.032, 19.032}),
    [](const auto& info) { return info.param.model + "_K" + std::to_string(info.param.stages); });

}  // namespace
}  // namespace pipescope
