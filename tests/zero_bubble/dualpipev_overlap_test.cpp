// DualPipeV's overlapped forward-and-backward pairs: the profile's optional
// per-layer fb_overlap_ms (read, checked, written back), the cost model's per-stage sum,
// and the simulator's charge F + B - min(overlap, F, B) for each pair the dualpipev
// generator marks (Schedule::overlapped_backwards). Expected numbers and why:
//   pairs on device d of K, M micro-batches (dualpipev.py's steps 4 and 5): step 4 runs
//   M-2K+d+1 iterations of two pairs, the last device's first F0, B1 not overlapped;
//   step 5 K-d-1 pairs: 2(M-2K+d+1) + (K-d-1) - [d = K-1] = 2M - 3K + d + 1 - [d = K-1].
//   Each pair saves min(overlap, F, B) of its device's busy time (the pair never runs
//   shorter than its longer op). With K = 1 one device runs everything: step =
//   2M (F + B) - (2M - 3) min(overlap, F, B).
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "sim/simulator.h"
#include "tests/support/test_support.h"

using namespace pipescope;

namespace {

const char* kProfile = R"({
  "format": "pipescope.profile", "version": 1, "model": "m", "batch_sizes": [1, 2],
  "layers": [{"name": "a", "forward_ms": [1, 2], "backward_ms": [2, 4], "activation_bytes": [10, 20],
              "output_bytes": [5, 10], "parameter_bytes": 7, "fb_overlap_ms": [0.5, 1.5]},
             {"name": "b", "forward_ms": [1, 2], "backward_ms": [2, 4], "activation_bytes": [10, 20],
              "output_bytes": [5, 10], "parameter_bytes": 7}]
})";

Profile parse(const std::string& text) { return pipescope::testing::parse_profile_text(text); }
// The error of kProfile with `from` replaced by `to`.
std::string error_of(const std::string& text, const std::string& from, const std::string& to) {
  return pipescope::testing::profile_error(pipescope::testing::replaced(text, from, to));
}

TEST(FbOverlap, ReadInterpolatedAndWrittenBack) {
  const Profile p = parse(kProfile);
  EXPECT_DOUBLE_EQ(p.fb_overlap_ms(0, 1.5), 1.0);  // halfway between 0.5 and 1.5
  EXPECT_DOUBLE_EQ(p.fb_overlap_ms(1, 2.0), 0.0);  // absent: pairs run back to back
  const Profile q = parse(profile_to_json(p).dump());
  EXPECT_EQ(q.layers[0].fb_overlap_ms, (std::vector<double>{0.5, 1.5}));
  EXPECT_TRUE(q.layers[1].fb_overlap_ms.empty());
}

TEST(FbOverlap, MalformedValuesNameFileFieldAndRule) {
  const std::string overlap = R"("fb_overlap_ms": [0.5, 1.5])";
  EXPECT_NE(error_of(kProfile, overlap, R"("fb_overlap_ms": [0.5])")
                .find("p.json: layers[0].fb_overlap_ms: expected 2 values (one per batch_sizes entry), got 1"),
            std::string::npos);
  EXPECT_NE(error_of(kProfile, overlap, R"("fb_overlap_ms": [-1, 1])").find("p.json: layers[0].fb_overlap_ms[0]"),
            std::string::npos);
  const std::string above = error_of(kProfile, overlap, R"("fb_overlap_ms": [0.5, 2.5])");
  EXPECT_NE(above.find("p.json: layers[0].fb_overlap_ms[1]: expected at most min(forward_ms, backward_ms) = 2"),
            std::string::npos)
      << above;
}

TEST(FbOverlap, TheCostModelSumsTheStagesLayers) {
  const Profile p = parse(kProfile);
  Plan plan;
  plan.profile = "p.json";
  plan.batch_size = 2;
  plan.microbatches = 1;
  plan.stages = {{0, 2, {0}}};
  EXPECT_EQ(build_cost_model(p, plan, Hardware::ideal(1)).stages[0].fb_overlap_ns, 1'500'000);
}

// Uniform chunks: F and B (= I + W, each half) per chunk, `overlap` per pair.
CostModel chunk_costs(const Schedule& s, int64_t f, int64_t b, int64_t overlap) {
  CostModel c;
  for (int st = 0; st < s.stages(); ++st) {
    StageCost x;
    x.first_layer = st;
    x.end_layer = st + 1;
    x.forward_ns = x.recompute_ns = f;
    x.backward_ns = b;
    x.backward_input_ns = b / 2;
    x.backward_weight_ns = b - b / 2;
    x.fb_overlap_ns = overlap;
    x.activation_bytes = 1;
    x.send_bytes = 1;
    c.stages.push_back(x);
  }
  for (int d = 0; d < s.positions(); ++d) {
    c.position_device.push_back(d);
    c.position_devices.push_back({d});
  }
  c.stage_position = s.stage_position;
  return c;
}

TEST(FbOverlap, EachMarkedPairSavesMinOfOverlapFAndBOnItsDevice) {
  const int K = 4, M = 10;
  const Schedule s = make_dualpipev(K, M);
  int total = 0;
  for (int d = 0; d < K; ++d) total += 2 * M - 3 * K + d + 1 - (d == K - 1);
  EXPECT_EQ(static_cast<int>(s.overlapped_backwards.size()), total);
  const int64_t F = 3000, B = 5000;
  const StepReport plain = simulate(s, chunk_costs(s, F, B, 0), Hardware::ideal(K));
  for (int64_t overlap : {int64_t{1000}, int64_t{2500}, int64_t{9000}}) {  // the last above min(F, B): saves F
    const StepReport r = simulate(s, chunk_costs(s, F, B, overlap), Hardware::ideal(K));
    for (int d = 0; d < K; ++d) {
      const int pairs = 2 * M - 3 * K + d + 1 - (d == K - 1);
      EXPECT_EQ(plain.positions[d].busy_ns - r.positions[d].busy_ns, pairs * std::min({overlap, F, B}))
          << "device " << d << ", overlap " << overlap;
    }
    EXPECT_LT(r.step_ns, plain.step_ns);
  }
  EXPECT_EQ(simulate(s, chunk_costs(s, F, B, 0), Hardware::ideal(K)).step_ns, plain.step_ns);
}

TEST(FbOverlap, OneDeviceStepIsTheClosedForm) {
  const int M = 6;
  const int64_t F = 3000, B = 5000, overlap = 1200;
  const Schedule s = make_dualpipev(1, M);
  const StepReport r = simulate(s, chunk_costs(s, F, B, overlap), Hardware::ideal(1));
  EXPECT_EQ(r.step_ns, 2 * M * (F + B) - (2 * M - 3) * overlap);
}

TEST(FbOverlap, OtherSchedulesAndReMaterialisationRunBackToBack) {
  // Interleaved 1F1B has adjacent F and B of different chunks too, but no marks; with
  // recompute an R sits between dualpipev's F and B, so its marks save nothing.
  const Schedule inter = make_interleaved(2, 4, 2);
  EXPECT_TRUE(inter.overlapped_backwards.empty());
  EXPECT_EQ(simulate(inter, chunk_costs(inter, 3000, 5000, 1000), Hardware::ideal(2)).step_ns,
            simulate(inter, chunk_costs(inter, 3000, 5000, 0), Hardware::ideal(2)).step_ns);
  const Schedule rc = make_dualpipev(2, 4, true);
  EXPECT_EQ(simulate(rc, chunk_costs(rc, 3000, 5000, 1000), Hardware::ideal(2)).step_ns,
            simulate(rc, chunk_costs(rc, 3000, 5000, 0), Hardware::ideal(2)).step_ns);
}

}  // namespace
