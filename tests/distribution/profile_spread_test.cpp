// A profile's optional measured spread (forward_cv / backward_cv per layer) and the
// per-stage CV `--jitter profile` samples with: read, written back, refused when
// malformed, and combined per stage as the time-weighted mean of its layers' CVs.
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/profile.h"
#include "interop/synth_profile.h"
#include "sim/distribution.h"

namespace pipescope {
namespace {

Json two_layer_profile() {
  Json layer = {{"name", "a"},
                {"forward_ms", {1.0, 2.0}},
                {"backward_ms", {2.0, 4.0}},
                {"activation_bytes", {100, 200}},
                {"output_bytes", {10, 20}},
                {"parameter_bytes", 1000},
                {"forward_cv", {0.1, 0.1}},
                {"backward_cv", {0.1, 0.1}}};
  Json second = layer;
  second["name"] = "b";
  second["forward_cv"] = {0.3, 0.5};
  second["backward_cv"] = {0.3, 0.5};
  return {{"format", "pipescope.profile"}, {"version", 1}, {"model", "m"},
          {"device", {{"name", "cpu"}, {"memory_bytes", 1 << 30}}}, {"backend", "cpu"}, {"dtype", "fp32"},
          {"batch_sizes", {1, 2}}, {"layers", {layer, second}}};
}

Profile read(const Json& j) { return profile_from_json(JsonReader::from_text(j.dump(), "p.json")); }

TEST(ProfileSpread, IsReadAndWrittenBack) {
  const Profile p = read(two_layer_profile());
  ASSERT_TRUE(p.has_spread());
  EXPECT_EQ(p.layers[1].forward_cv, (std::vector<double>{0.3, 0.5}));
  EXPECT_EQ(read(profile_to_json(p)).layers[1].backward_cv, p.layers[1].backward_cv);
}

TEST(ProfileSpread, MalformedSpreadIsRefusedWithItsField) {
  Json j = two_layer_profile();
  j["layers"][0].erase("backward_cv");
  EXPECT_THROW(read(j), InputError);
  try {
    read(j);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("forward_cv and backward_cv go together"), std::string::npos) << e.what();
  }
  j = two_layer_profile();
  j["layers"][1]["forward_cv"] = {0.1};  // one value for two batch sizes
  EXPECT_THROW(read(j), InputError);
  j = two_layer_profile();
  j["layers"][1]["forward_cv"] = {-0.1, 0.1};
  EXPECT_THROW(read(j), InputError);
  j = two_layer_profile();
  j["layers"][1]["backward_cv"] = {0.1, 1e9};
  EXPECT_THROW(read(j), InputError);
}

TEST(ProfileSpread, AStageCvIsTheTimeWeightedMeanOfItsLayers) {
  // Micro-batch 1: both layers take f = 1, b = 2 ms; CVs 0.1 and 0.3: (0.1 x 3 + 0.3 x 3) / 6 = 0.2.
  // Micro-batch 1.5 interpolates layer b's CV to 0.4: (0.1 x 4.5 + 0.4 x 4.5) / 9 = 0.25.
  const Profile p = read(two_layer_profile());
  CostModel c;
  StageCost both;
  both.first_layer = 0;
  both.end_layer = 2;
  c.stages = {both};
  c.microbatch_size = 1;
  EXPECT_NEAR(stage_cv_from_profile(p, c)[0], 0.2, 1e-12);
  c.microbatch_size = 1.5;
  EXPECT_NEAR(stage_cv_from_profile(p, c)[0], 0.25, 1e-12);
  StageCost first = both, second = both;
  first.end_layer = 1;
  second.first_layer = 1;
  c.stages = {first, second};
  c.microbatch_size = 2;
  const std::vector<double> cv = stage_cv_from_profile(p, c);
  ASSERT_EQ(cv.size(), 2u);
  EXPECT_NEAR(cv[0], 0.1, 1e-12);
  EXPECT_NEAR(cv[1], 0.5, 1e-12);
}

TEST(ProfileSpread, AProfileWithoutSpreadIsRefusedForJitterProfile) {
  Json j = two_layer_profile();
  for (auto& l : j["layers"]) l.erase("forward_cv"), l.erase("backward_cv");
  const Profile p = read(j);
  EXPECT_FALSE(p.has_spread());
  CostModel c;
  c.stages.resize(1);
  c.stages[0].end_layer = 2;
  EXPECT_THROW(stage_cv_from_profile(p, c), InputError);
}

}  // namespace
}  // namespace pipescope
