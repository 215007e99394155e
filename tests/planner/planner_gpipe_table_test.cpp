// GPipe Table 2's trends, regenerated from the shipped profiles (experiments/):
// monotone in M; near-linear in K for uniform layers when M >> K; clearly sub-linear for
// the uneven AmoebaNet-like layers with equal layer counts, and partly recovered by the
// optimal partition.
#include <gtest/gtest.h>

#include "experiments/gpipe_table2.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

Profile shipped(const std::string& name) {
  return load_profile(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/" + name + ".json");
}

TEST(GpipeTable2, ThroughputRisesWithMicroBatches) {
  for (const char* name : {"toy-uniform", "amoebanet-like"}) {
    const SpeedupTable t = gpipe_table2(shipped(name), "uniform");
    for (int K : t.stages) {
      EXPECT_LT(t.at(1, K), t.at(4, K)) << name << " K=" << K;
      EXPECT_LT(t.at(4, K), t.at(32, K)) << name << " K=" << K;
    }
  }
}

TEST(GpipeTable2, UniformLayersScaleNearLinearlyWhenMExceedsK) {
  // Closed form at M = 32: speed-up(K) = K x 32 / (32 + K - 1) / (2 x 1/2), so
  // K = 8 over K = 2 is 4 x 33/39 = 3.385: at least 80% of linear (4x).
  const SpeedupTable t = gpipe_table2(shipped("toy-uniform"), "uniform");
  EXPECT_NEAR(t.at(32, 8), 8.0 * 32 / 39, 1e-6);
  EXPECT_NEAR(t.at(32, 2), 2.0 * 32 / 33, 1e-6);
  EXPECT_GE(t.at(32, 8) / t.at(32, 2), 0.8 * 4);
}

TEST(GpipeTable2, UnevenLayersAreSubLinearAndOptimalRecoversPart) {
  // Layers cost 1,1,1,4 repeated (16 layers, 28 units). A GPipe step of stages t_s with M
  // micro-batches takes (sum t_s + (M - 1) max t_s) per micro-batch's share, and at M = 1
  // just sum t_s. K = 8, M = 32 against K = 2, M = 1:
  //   uniform model (16 units, stages of 2):  16 / ((16 + 31 x 2) / 32) = 6.564
  //   equal counts (stages 2,5,2,5,...):      28 / ((28 + 31 x 5) / 32) = 4.896 (0.746 of it)
  //   optimal (stages 3,4,3,4,...):           28 / ((28 + 31 x 4) / 32) = 5.895 (0.898 of it)
  const SpeedupTable uniform_model = gpipe_table2(shipped("toy-uniform"), "uniform");
  const SpeedupTable equal_counts = gpipe_table2(shipped("amoebanet-like"), "uniform");
  const SpeedupTable optimal = gpipe_table2(shipped("amoebanet-like"), "optimal");
  const double linear = uniform_model.at(32, 8);
  EXPECT_NEAR(linear, 16.0 / (78.0 / 32), 1e-6);
  EXPECT_NEAR(equal_counts.at(32, 8), 28.0 / (183.0 / 32), 1e-6);
  EXPECT_NEAR(optimal.at(32, 8), 28.0 / (152.0 / 32), 1e-6);
  EXPECT_LT(equal_counts.at(32, 8), 0.75 * linear);
  EXPECT_GT(optimal.at(32, 8), equal_counts.at(32, 8) * 1.2);
  EXPECT_LT(optimal.at(32, 8), linear);
}

}  // namespace
}  // namespace pipescope
