// Plan file v2: an optional "layout" that core keeps as raw JSON and llm/plan_layout.h
// reads. A v1 plan reads and writes unchanged; a v2 plan round-trips field for field; a
// bad layout names the file and the JSON path.
#include <gtest/gtest.h>

#include "core/error.h"
#include "llm/plan_layout.h"

namespace pipescope {
namespace {

const std::string kV1 =
    R"({"format": "pipescope.plan", "version": 1, "profile": "x.json", "batch_size": 8, "microbatches": 8,
        "schedule": {"kind": "1f1b"}, "stages": [{"layers": [0, 1], "devices": [0]}, {"layers": [1, 2], "devices": [1]}]})";

std::string v2(const std::string& layout, int version = 2) {
  std::string text = kV1;
  text.replace(text.find("\"version\": 1"), 12, "\"version\": " + std::to_string(version));
  return text.substr(0, text.rfind('}')) + ", \"layout\": " + layout + "}";
}

std::string refusal(const std::string& text) {
  try {
    (void)plan_layout(plan_from_json(JsonReader::from_text(text, "plan.json")));
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

TEST(LlmPlanLayout, VersionOnePlansReadAndWriteUnchanged) {
  const Plan p = plan_from_json(JsonReader::from_text(kV1, "plan.json"));
  EXPECT_FALSE(p.layout.has_value());
  EXPECT_FALSE(plan_layout(p).has_value());
  const Json out = plan_to_json(p);
  EXPECT_EQ(out["version"], 1);
  EXPECT_FALSE(out.contains("layout"));
}

TEST(LlmPlanLayout, VersionTwoRoundTrips) {
  ParallelLayout l;
  l.t = 8, l.sequence_parallel = true, l.cp = 2, l.ep = 2, l.d = 4, l.p = 2, l.v = 2;
  l.sharding = Sharding::DistributedOptimizer, l.recompute = Recompute::Selective;
  l.micro_batch = 2, l.microbatches = 8, l.layers_per_chunk = {1, 2, 3, 4};
  l.precision = PrecisionRecipe::Fp8Params, l.order = "tp-cp-ep-pp-dp";
  l.overlap_grad_reduce = l.overlap_param_gather = true;
  Plan p = plan_from_json(JsonReader::from_text(kV1, "plan.json"));
  p.layout = layout_to_json(l);
  const Json out = plan_to_json(p);
  EXPECT_EQ(out["version"], 2);
  const Plan back = plan_from_json(JsonReader::from_text(out.dump(), "plan.json"));
  ASSERT_TRUE(plan_layout(back).has_value());
  EXPECT_EQ(layout_to_json(*plan_layout(back)), layout_to_json(l));
  EXPECT_EQ(plan_to_json(back), out);
  // Absent keys take ParallelLayout's defaults.
  const Plan empty = plan_from_json(JsonReader::from_text(v2("{}"), "plan.json"));
  EXPECT_EQ(layout_to_json(*plan_layout(empty)), layout_to_json(ParallelLayout{}));
}

TEST(LlmPlanLayout, BadLayoutsNameFileAndField) {
  EXPECT_EQ(refusal(v2(R"({"t": 8})", 1)),
            "plan.json: layout: needs \"version\": 2 (version 1 plans have no layout)");
  EXPECT_NE(refusal(v2(R"({"t": 8})", 4)).find("plan.json: version"), std::string::npos);  // 3 is the newest
  EXPECT_EQ(refusal(v2("[8]")), "plan.json: layout: expected an object");
  EXPECT_NE(refusal(v2(R"({"t": 0})")).find("plan.json: layout.t:"), std::string::npos);
  EXPECT_EQ(refusal(v2(R"({"sharding": "zero-4"})")),
            "plan.json: layout.sharding: expected none, distributed-optimizer, zero-1, zero-2 or zero-3, got "
            "\"zero-4\"");
  EXPECT_EQ(refusal(v2(R"({"recompute": "block"})")),
            "plan.json: layout.recompute: expected none, selective or full, got \"block\"");
  EXPECT_EQ(refusal(v2(R"({"p": 2, "v": 2, "layers_per_chunk": [4, 4]})")),
            "plan.json: layout.layers_per_chunk: expected p * v = 4 entries, got 2");
  EXPECT_NE(refusal(v2(R"({"layers_per_chunk": [0]})")).find("plan.json: layout.layers_per_chunk[0]"),
            std::string::npos);
  EXPECT_NE(refusal(v2(R"({"sequence_parallel": 1})")).find("plan.json: layout.sequence_parallel"),
            std::string::npos);
  EXPECT_NE(refusal(v2(R"({"overlap_grad_reduce": "yes"})")).find("plan.json: layout.overlap_grad_reduce"),
            std::string::npos);
  EXPECT_NE(refusal(v2(R"({"overlap_param_gather": 0})")).find("plan.json: layout.overlap_param_gather"),
            std::string::npos);
}

// "schedule" (the layout's pipeline schedule) round-trips by pipescope's name; a file
// without it (written before it) reads as Megatron's default: 1f1b, interleaved with v > 1.
TEST(LlmPlanLayout, ScheduleRoundTripsAndDefaultsByV) {
  ParallelLayout l;
  l.p = 4, l.v = 2, l.microbatches = 8, l.schedule = ScheduleKind::ZeroBubbleV;
  const Json j = layout_to_json(l);
  EXPECT_EQ(j["schedule"], "zb-v");
  const Plan zbv = plan_from_json(JsonReader::from_text(v2(j.dump()), "plan.json"));
  ASSERT_TRUE(plan_layout(zbv)->schedule.has_value());
  EXPECT_EQ(*plan_layout(zbv)->schedule, ScheduleKind::ZeroBubbleV);
  const Plan old_v2 = plan_from_json(JsonReader::from_text(v2(R"({"p": 4, "v": 2})"), "plan.json"));
  EXPECT_FALSE(plan_layout(old_v2)->schedule.has_value());
  EXPECT_EQ(layout_to_json(*plan_layout(old_v2))["schedule"], "interleaved");
  const Plan old_v1 = plan_from_json(JsonReader::from_text(v2(R"({"p": 4})"), "plan.json"));
  EXPECT_EQ(layout_to_json(*plan_layout(old_v1))["schedule"], "1f1b");
  EXPECT_NE(refusal(v2(R"({"schedule": "zbv2"})")).find("plan.json: layout.schedule: expected gpipe, 1f1b"),
            std::string::npos);
  EXPECT_NE(refusal(v2(R"({"schedule": 3})")).find("plan.json: layout.schedule"), std::string::npos);
}

}  // namespace
}  // namespace pipescope
