// Profile reading, validation and interpolation.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/profile.h"
#include "interop/synth_profile.h"
#include "tests/support/test_support.h"

using namespace pipescope;

namespace {

const char* kValid = R"({
  "format": "pipescope.profile", "version": 1, "model": "m",
  "device": {"name": "d", "memory_bytes": 1000}, "backend": "cpu", "dtype": "fp32",
  "batch_sizes": [1, 2, 4],
  "layers": [{"name": "a", "forward_ms": [1, 2, 4], "backward_ms": [2, 4, 8],
              "activation_bytes": [10, 20, 40], "output_bytes": [5, 10, 20], "parameter_bytes": 7}]
})";

using pipescope::testing::profile_error;
using pipescope::testing::replaced;
Profile parse(const std::string& text) { return pipescope::testing::parse_profile_text(text); }

}  // namespace

TEST(Interpolation, PiecewiseLinearInsideAndLinearOutside) {
  std::vector<double> xs = {1, 2, 4}, ys = {1, 3, 4};
  EXPECT_DOUBLE_EQ(interpolate_piecewise(xs, ys, 1.5), 2.0);   // halfway between 1 and 3
  EXPECT_DOUBLE_EQ(interpolate_piecewise(xs, ys, 3.0), 3.5);   // halfway between 3 and 4
  EXPECT_DOUBLE_EQ(interpolate_piecewise(xs, ys, 8.0), 6.0);   // slope 0.5 past the end
  EXPECT_DOUBLE_EQ(interpolate_piecewise(xs, ys, 0.5), 0.0);   // slope 2 before the start
  EXPECT_DOUBLE_EQ(interpolate_piecewise({4}, {10}, 6), 15.0); // one point: proportional
}

TEST(Interpolation, ReproducesEveryTabulatedPointAndLinesExactly) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.1, 10);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> xs = {1, 2, 4, 8, 16};
    double a = u(rng), b = u(rng);
    std::vector<double> ys;
    for (double x : xs) ys.push_back(a * x + b);
    for (double x : xs) EXPECT_NEAR(interpolate_piecewise(xs, ys, x), a * x + b, 1e-9);
    double x = u(rng) * 4;  // any point, inside or outside: a line stays a line
    EXPECT_NEAR(interpolate_piecewise(xs, ys, x), a * x + b, 1e-9) << "trial " << trial;
  }
}

TEST(Profile, ReadsValuesAndInterpolatesPerLayer) {
  Profile p = parse(kValid);
  EXPECT_EQ(p.num_layers(), 1);
  EXPECT_DOUBLE_EQ(p.forward_ms(0, 3), 3.0);
  EXPECT_EQ(p.activation_bytes(0, 3), 30);
  EXPECT_DOUBLE_EQ(p.backward_input_ms(0, 2), 2.0);  // no split: half of backward
  EXPECT_TRUE(p.is_chain());
}

TEST(Profile, RoundTripsThroughJson) {
  Profile p = make_gpt_profile(GptSpec{});
  Profile q = profile_from_json(JsonReader::from_text(profile_to_json(p).dump(), "rt"));
  EXPECT_EQ(profile_to_json(p), profile_to_json(q));
  EXPECT_EQ(q.num_layers(), 26);  // embedding + 24 blocks + head
}

TEST(Profile, GptSynthCountsAbout1point3BillionParameters) {
  Profile p = make_gpt_profile(GptSpec{});
  int64_t bytes = 0;
  for (const auto& l : p.layers) bytes += l.parameter_bytes;
  // 24 blocks x (12 h^2 + 13 h) + V h + s h = 1.31e9 parameters, plus the head's own
  // copy of the word embedding (V h = 0.10e9), 2 bytes each.
  EXPECT_NEAR(static_cast<double>(bytes) / 2, 1.418e9, 0.005e9);
}

struct BadCase {
  std::string from, to, expect;
};

TEST(Profile, EveryValidationErrorNamesFileFieldAndExpectation) {
  std::vector<BadCase> cases = {
      {"\"version\": 1", "\"version\": 2", "p.json: version: expected an integer <= 1"},
      {"pipescope.profile", "pipescope.plan", "p.json: format: expected \"pipescope.profile\""},
      {"\"forward_ms\": [1, 2, 4]", "\"forward_ms\": [1, 2]",
       "p.json: layers[0].forward_ms: expected 3 values (one per batch_sizes entry), got 2"},
      {"\"backward_ms\": [2, 4, 8]", "\"backward_ms\": [2, -4, 8]",
       "p.json: layers[0].backward_ms[1]: expected a number >= 0"},
      {"[1, 2, 4]", "[1, 4, 2]", "p.json: batch_sizes[2]: batch_sizes must be strictly increasing"},
      {"[1, 2, 4]", "[0, 2, 4]", "p.json: batch_sizes[0]: batch sizes must be positive"},
      {"\"parameter_bytes\": 7", "\"parameter_bytes\": -7", "p.json: layers[0].parameter_bytes: expected an integer >= 0"},
      {"\"parameter_bytes\": 7", "\"parameter_bytes\": 7.5", "p.json: layers[0].parameter_bytes: expected an integer, got 7.5"},
      {"\"name\": \"a\",", "", "p.json: layers[0].name: missing required field"},
      {"\"output_bytes\": [5, 10, 20]", "\"output_bytes\": \"x\"", "p.json: layers[0].output_bytes: expected an array"},
      {"\"parameter_bytes\": 7}", "\"parameter_bytes\": 7, \"backward_input_ms\": [1,1,1]}",
       "backward_input_ms and backward_weight_ms go together"},
      {"\"parameter_bytes\": 7}]", "\"parameter_bytes\": 7}], \"edges\": [[0, 0]]",
       "p.json: edges[0]: edge 0 -> 0 goes backward"},
      {"\"parameter_bytes\": 7}]", "\"parameter_bytes\": 7}], \"edges\": [[0, 3]]",
       "p.json: edges[0][1]: expected an integer <= 0"},
      {"\"activation_bytes\": [10, 20, 40]", "\"activation_bytes\": [10, 20, 1e300]",
       "p.json: layers[0].activation_bytes[2]: value is implausibly large"},
      // the parser names where it stood: the array's second element, after "format"
      {"{", "[", "p.json: [1]: invalid JSON: parse error at line 2, column 11: syntax error while parsing array - unexpected ':'; expected ']'"},
  };
  for (const BadCase& c : cases) {
    std::string text = c.from.empty() ? kValid : replaced(kValid, c.from, c.to);
    std::string err = profile_error(text);
    EXPECT_NE(err.find(c.expect), std::string::npos) << "got: " << err << "\nexpected: " << c.expect;
  }
}

TEST(Profile, MissingFileNamesTheFile) {
  try {
    load_profile("/nonexistent/profile.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/profile.json: cannot open file");
  }
}

namespace {

// Three layers saving 100, 200 and 300 bytes at batch 1, of which layer 0 shares 50 with
// layer 1 and layer 1 shares 120 with layer 2 (a ReLU's output, the next Linear's input).
const char* kShared = R"({
  "format": "pipescope.profile", "version": 1, "model": "m", "batch_sizes": [1, 2],
  "layers": [
    {"name": "a", "forward_ms": [1, 2], "backward_ms": [2, 4], "activation_bytes": [100, 200],
     "output_bytes": [5, 10], "parameter_bytes": 0, "shared_with_next_bytes": [50, 100]},
    {"name": "b", "forward_ms": [1, 2], "backward_ms": [2, 4], "activation_bytes": [200, 400],
     "output_bytes": [5, 10], "parameter_bytes": 0, "shared_with_next_bytes": [120, 240]},
    {"name": "c", "forward_ms": [1, 2], "backward_ms": [2, 4], "activation_bytes": [300, 600],
     "output_bytes": [5, 10], "parameter_bytes": 0}]
})";

}  // namespace

TEST(Profile, AStageCountsATensorTwoOfItsLayersSaveOnce) {
  const Profile p = parse(kShared);
  // One stage of all three: 600 saved, 50 + 120 of it twice.
  EXPECT_EQ(p.stash_bytes(0, 3, 1), 600 - 170);
  // A cut between layers 0 and 1: each stage keeps its own copy of what crosses.
  EXPECT_EQ(p.stash_bytes(0, 1, 1), 100);
  EXPECT_EQ(p.stash_bytes(1, 3, 1), 500 - 120);
  EXPECT_EQ(p.stash_bytes(0, 2, 2), 600 - 100) << "interpolated per batch size like the rest";
  EXPECT_EQ(p.shared_with_next_bytes(2, 1), 0) << "absent: nothing shared";
  const Profile back = profile_from_json(JsonReader::from_text(profile_to_json(p).dump(), "rt"));
  EXPECT_EQ(back.layers[1].shared_with_next_bytes, p.layers[1].shared_with_next_bytes);
}

TEST(Profile, SharedWithNextRefusesWhatCannotBe) {
  EXPECT_NE(profile_error(replaced(kShared, "[120, 240]", "[120, 500]"))
                .find("p.json: layers[1].shared_with_next_bytes[1]: expected at most activation_bytes (400)"),
            std::string::npos);
  EXPECT_NE(profile_error(replaced(kShared, "\"parameter_bytes\": 0}]", "\"parameter_bytes\": 0, "
                                   "\"shared_with_next_bytes\": [1, 2]}]"))
                .find("p.json: layers[2].shared_with_next_bytes: the last layer has no next layer"),
            std::string::npos);
  EXPECT_NE(profile_error(replaced(kShared, "\"parameter_bytes\": 0}]", "\"parameter_bytes\": 0}], "
                                   "\"edges\": [[0, 1], [1, 2], [0, 2]]"))
                .find("p.json: layers[0].shared_with_next_bytes: only a chain profile"),
            std::string::npos);
}
