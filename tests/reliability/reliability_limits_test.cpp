// Absurd inputs through the library: each gets an InputError naming what is wrong
// (quickly: no test here builds anything big), or a bounded answer that is exactly
// right. The limits are those of docs/reliability.md.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "interop/synth_profile.h"
#include "planner/partition.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"
#include "tests/reliability/reliability_util.h"

namespace pipescope {
namespace {

using testing::uniform_profile_json;

Profile profile_of(const Json& j) { return profile_from_json(JsonReader::from_text(j.dump(), "test.json")); }

// Runs `f`, expects an InputError, returns its message.
template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

Plan plan_for(const Profile& p, int stages, int microbatches, ScheduleKind kind = ScheduleKind::OneFOneB) {
  PlanChoice c;
  c.stages = stages;
  c.microbatches = microbatches;
  c.schedule = kind;
  c.partition = PartitionKind::Uniform;
  return make_plan(p, c).plan;
}

TEST(ReliabilityLimits, ActivationBytesTimesMicrobatchesBeyondInt64AreRefusedNamingTheStage) {
  // 8 layers x 2^50 bytes x 1000 micro-batches = 9.0e21 bytes held on device 0 under
  // 1F1B's worst case accounting; int64 ends at 9.2e18.
  Profile p = profile_of(uniform_profile_json(16, 1.0, 1125899906842624.0));
  Plan plan = plan_for(p, 2, 1000);
  std::string what = input_error([&] { build_cost_model(p, plan, Hardware::ideal(2)); });
  EXPECT_NE(what.find("stages[0]"), std::string::npos) << what;
  EXPECT_NE(what.find("2^62 bytes"), std::string::npos) << what;
}

TEST(ReliabilityLimits, ParameterBytesSummedOverAMillionLayersWouldOverflowAndAreRefused) {
  // Each value passes the reader (<= 2^50) but 10^4 layers of 2^50 parameters with
  // 4 bytes of state per parameter byte is 4.5e19 > 2^62.
  Profile p = profile_of(uniform_profile_json(10000, 1.0, 1024, 1125899906842624.0));
  Plan plan = plan_for(p, 1, 1);
  std::string what = input_error([&] { build_cost_model(p, plan, Hardware::ideal(1)); });
  EXPECT_NE(what.find("device 0 would hold"), std::string::npos) << what;
}

TEST(ReliabilityLimits, AStepLongerThan146YearsOfSimulatedTimeIsRefused) {
  // 16 layers x (2.5e8 + 5e8) ms x 10^6 micro-batches = 1.2e16 ms, about 380,000 years.
  Profile p = profile_of(uniform_profile_json(16, 1e9 / 4));
  Plan plan = plan_for(p, 1, 1000000);
  std::string what = input_error([&] { build_cost_model(p, plan, Hardware::ideal(1)); });
  EXPECT_NE(what.find("146 years"), std::string::npos) << what;
}

TEST(ReliabilityLimits, ExtrapolationFromTinyBatchSizesToInfinityIsRefused) {
  // Batch sizes 1e-300 apart: extrapolating to micro-batch 1 multiplies by ~1e300 and
  // the bytes become 1e306 or infinite.
  Plan plan = plan_for(profile_of(uniform_profile_json(4)), 2, 2);  // micro-batch size 1
  Json j = uniform_profile_json(4);
  j["batch_sizes"] = {1e-300, 2e-300, 4e-300};
  for (Json& layer : j["layers"]) layer["activation_bytes"] = {1024, 2048, 4096};
  Profile p = profile_of(j);
  std::string what = input_error([&] { build_cost_model(p, plan, Hardware::ideal(2)); });
  EXPECT_NE(what.find("stages[0]"), std::string::npos) << what;
}

TEST(ReliabilityLimits, LargestValuesWithinTheLimitsGiveTheExactAnswer) {
  // One layer per stage with 2^50 parameter bytes: static bytes = 2^50 x (1 + 1 + 2)
  // = 2^52 exactly; 2^50 activation bytes at micro-batch 1, M = 4: 1F1B stage 0 keeps
  // min(K - 0, M) = 2 micro-batches, 2^51 bytes. Peak = 2^52 + 2^51.
  Profile p = profile_of(uniform_profile_json(2, 1.0, 1125899906842624.0, 1125899906842624.0));
  Plan plan = plan_for(p, 2, 4);
  CostModel costs = build_cost_model(p, plan, Hardware::ideal(2));
  StepReport r = simulate(make_1f1b(2, 4), costs, Hardware::ideal(2));
  EXPECT_EQ(r.positions[0].static_bytes, int64_t{1} << 52);
  EXPECT_EQ(r.positions[0].peak_activation_bytes, int64_t{1} << 51);
  EXPECT_EQ(r.positions[0].peak_memory_bytes, (int64_t{1} << 52) + (int64_t{1} << 51));
}

TEST(ReliabilityLimits, AbsurdStageAndMicrobatchCountsAreRefusedBeforeAnyAllocation) {
  EXPECT_NE(input_error([] { make_schedule({ScheduleKind::OneFOneB, 1000000, 4}); }).find("4096"),
            std::string::npos);
  // K = 8, M = 10^9: 1.6e10 ops against the 5e7 limit.
  EXPECT_NE(input_error([] { make_schedule({ScheduleKind::GPipe, 8, 1000000000}); }).find("limit"),
            std::string::npos);
  EXPECT_NE(input_error([] { make_schedule({ScheduleKind::Interleaved, 4096, 1 << 30, 64}); }).find("limit"),
            std::string::npos);
}

TEST(ReliabilityLimits, QuadraticPartitionOfAHugeProfileIsRefusedNotLeftRunningForHours) {
  // 6144 layers into 256 stages: the gpipe (least-variance) programme would take
  // 256 x 6144^2 / 2 = 4.8e9 steps, past its 4e9 limit, and is refused; the optimal
  // (min-max) partitioner and the uniform one handle it at once. Uniform layers: both
  // cut 24 layers per stage. (The min-max programme scans about L / S cut points per
  // stage end: 10^5 layers into 8 stages take it seconds, 256 stages here milliseconds.)
  UniformSpec u;
  u.layers = 6144;
  Profile p = make_uniform_profile(u);
  std::string what = input_error([&] { gpipe_partition(p, 256, 1.0, false); });
  EXPECT_NE(what.find("--partition optimal or uniform"), std::string::npos) << what;
  LayerRanges ranges = uniform_partition(p.num_layers(), 256);
  EXPECT_EQ(ranges.front(), std::make_pair(0, 24));
  EXPECT_EQ(ranges.back().second, 6144);
  EXPECT_EQ(balanced_partition(p, 256, 1.0, false), ranges);
}

TEST(ReliabilityLimits, SynthRefusesTenMillionLayersAndOverflowingSizes) {
  UniformSpec u;
  u.layers = 10000000;
  EXPECT_NE(input_error([&] { make_uniform_profile(u); }).find("--layers"), std::string::npos);
  GptSpec g;
  g.layers = 1;
  g.hidden = 2000000000;
  g.heads = 1;
  // 4 h = 8e9 does not fit Megatron's int FFN width: refused before any byte count.
  EXPECT_NE(input_error([&] { make_gpt_profile(g); }).find("the default FFN width (8000000000) exceeds 2^31 - 1"),
            std::string::npos);
  g = GptSpec{};
  g.peak_tflops = INFINITY;
  EXPECT_NE(input_error([&] { make_gpt_profile(g); }).find("peak"), std::string::npos);
}

TEST(ReliabilityLimits, ProfileWithMoreThanAMillionLayersIsRefusedByTheLayerLimit) {
  // A crafted header: 10^6 + 1 empty layer objects (3 MB), refused on the count
  // before any layer is read.
  std::string text = R"({"format": "pipescope.profile", "version": 1, "model": "m",
    "device": {"name": "d", "memory_bytes": 1}, "backend": "cpu", "dtype": "fp32",
    "batch_sizes": [1], "layers": [{})";
  for (int i = 0; i < 1000000; ++i) text += ",{}";
  text += "]}";
  std::string what = input_error([&] { profile_from_json(JsonReader::from_text(text, "huge.json")); });
  EXPECT_NE(what.find("huge.json: layers: more than 1000000 layers"), std::string::npos) << what;
}

TEST(ReliabilityLimits, NegativeSizesAreRefusedNamingTheField) {
  Json j = uniform_profile_json(3);
  j["layers"][2]["activation_bytes"][1] = -1;
  EXPECT_NE(input_error([&] { profile_of(j); }).find("test.json: layers[2].activation_bytes[1]: expected a number >= 0"),
            std::string::npos);
  j = uniform_profile_json(3);
  j["layers"][0]["parameter_bytes"] = -4096;
  EXPECT_NE(input_error([&] { profile_of(j); }).find("layers[0].parameter_bytes"), std::string::npos);
  Json h = {{"format", "pipescope.hardware"}, {"version", 1}, {"name", "h"}, {"devices", 2},
            {"memory_bytes", -1}, {"link", {{"bandwidth_gb_per_s", 1}, {"latency_us", 1}}}};
  EXPECT_NE(input_error([&] { hardware_from_json(JsonReader::from_text(h.dump(), "hw.json")); })
                .find("hw.json: memory_bytes: expected an integer >= 1"),
            std::string::npos);
}

TEST(ReliabilityLimits, IntegersBeyondInt64AndNumbersBeyondDoubleNameTheirPath) {
  std::string plan = R"({"format": "pipescope.plan", "version": 1, "profile": "p.json",
    "batch_size": 18446744073709551616, "microbatches": 1, "schedule": {"kind": "1f1b"},
    "stages": [{"layers": [0, 1], "devices": [0]}]})";
  EXPECT_NE(input_error([&] { plan_from_json(JsonReader::from_text(plan, "plan.json")); }).find("plan.json: batch_size"),
            std::string::npos);
  std::string what = input_error([] { JsonReader::from_text(R"({"a": [1, {"b": [2, 3, -1e999]}]})", "x.json"); });
  EXPECT_NE(what.find("x.json: a[1].b[2]: invalid JSON: number overflow"), std::string::npos) << what;
}

// core/json_parse.h: every reader's parser stops at 100 levels of arrays and objects, naming
// where the 101st opens, so no recursive copy or dump of a parsed value (nlohmann's are
// recursive; a plan's raw "layout" and "job" are copied) can exhaust the stack. 10^6 levels
// used to reach the readers whole: the plan reader's copy of "layout" died of SIGSEGV.
TEST(ReliabilityLimits, NestingPastAHundredLevelsIsRefusedWhereTheHundredAndFirstOpens) {
  const int levels = 1000000;
  std::string arrays = R"({"a": )" + std::string(levels, '[') + std::string(levels, ']') + "}";
  std::string path = "a";
  for (int i = 0; i < 99; ++i) path += "[0]";  // containers 2..100 are the arrays a, a[0], ...
  EXPECT_EQ(input_error([&] { JsonReader::from_text(arrays, "x.json"); }),
            "x.json: " + path + ": JSON nested deeper than 100 levels of arrays and objects (the limit for pipescope "
            "input files)");
  std::string objects;
  for (int i = 0; i < levels; ++i) objects += R"({"b": )";
  objects += "1" + std::string(levels, '}');
  path = "b";
  for (int i = 0; i < 99; ++i) path += ".b";  // the top level is the first of the hundred
  EXPECT_EQ(input_error([&] { JsonReader::from_text(objects, "y.json"); }),
            "y.json: " + path + ": JSON nested deeper than 100 levels of arrays and objects (the limit for pipescope "
            "input files)");
  // exactly 100 levels are read
  const std::string hundred = std::string(100, '[') + std::string(100, ']');
  EXPECT_EQ(JsonReader::from_text(hundred, "z.json").json().dump(), hundred);
}

// A key given twice kept its last value (nlohmann's default): {"t": 1, "t": 4} read as t = 4
// without a word. JSON leaves it undefined (RFC 8259 4: names SHOULD be unique); pipescope refuses it.
TEST(ReliabilityLimits, AKeyGivenTwiceInOneObjectIsRefusedNamingIt) {
  EXPECT_EQ(input_error([] { JsonReader::from_text(R"({"layout": {"t": 1, "p": 2, "t": 4}})", "p.json"); }),
            "p.json: layout.t: key given twice in one object (each key may appear once)");
  EXPECT_EQ(input_error([] { JsonReader::from_text(R"([{"a": 1}, {"a": 1, "a": 1}])", "q.json"); }),
            "q.json: [1].a: key given twice in one object (each key may appear once)");
  // the same key in two objects is fine
  EXPECT_EQ(JsonReader::from_text(R"([{"a": 1}, {"a": 2}])", "r.json").json().size(), 2U);
}

// JSON has no NaN or Infinity; nlohmann refuses the literals, and the message now says
// where and why (it named neither).
TEST(ReliabilityLimits, NanAndInfinityLiteralsAreRefusedNamingTheirPath) {
  EXPECT_EQ(input_error([] { JsonReader::from_text(R"({"l": [{"f": [1, NaN]}]})", "n.json"); }),
            "n.json: l[0].f[1]: invalid JSON: parse error at line 1, column 18: syntax error while parsing value - "
            "invalid literal; last read: '1, N' (NaN and Infinity are not JSON numbers)");
  EXPECT_EQ(input_error([] { JsonReader::from_text(R"({"f": -Infinity})", "i.json"); }),
            "i.json: f: invalid JSON: parse error at line 1, column 8: syntax error while parsing value - invalid "
            "number; expected digit after '-'; last read: '-I' (NaN and Infinity are not JSON numbers)");
}

TEST(ReliabilityLimits, InputFilesAreReadUpToASizeLimit) {
  testing::TempDir dir;
  std::string path = dir.write("big.json", "[" + std::string(2000, ' ') + "]");
  EXPECT_NE(input_error([&] { JsonReader::from_file(path, 1000); }).find("larger than 1000 bytes"), std::string::npos);
  EXPECT_EQ(JsonReader::from_file(path, 4000).json().size(), 0u);
  EXPECT_NE(input_error([&] { JsonReader::from_file(dir.path().string()); }).find("is a folder"), std::string::npos);
}

}  // namespace
}  // namespace pipescope
