// Plan file v2: an optional "layout" that core keeps as raw JSON and llm/plan_layout.h
// reads. A v1 plan reads and writes unchanged; a v2 plan round-trips field for field; a
// bad layout names the file and the JSON path.
#include <gtest/gtest.h>

#include <memory>

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

// The layout object alone, as layout_from_json reads it (plan_layout also holds it to its plan).
ParallelLayout read_layout(const std::string& text) {
  auto root = std::make_shared<const Json>(Json::parse(text));
  return layout_from_json(JsonReader(root, root.get(), "plan.json", "layout"));
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
  // p, v, d (one of d pipelines), b and M as kV1 says them: plan_layout holds a layout to its plan
  l.t = 8, l.sequence_parallel = true, l.cp = 2, l.ep = 2, l.d = 4, l.p = 2, l.v = 1;
  l.sharding = Sharding::DistributedOptimizer, l.recompute = Recompute::Selective;
  l.micro_batch = 1, l.microbatches = 8, l.layers_per_chunk = {1, 2};
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
  EXPECT_EQ(layout_to_json(read_layout("{}")), layout_to_json(ParallelLayout{}));
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
  ASSERT_TRUE(read_layout(j.dump()).schedule.has_value());
  EXPECT_EQ(*read_layout(j.dump()).schedule, ScheduleKind::ZeroBubbleV);
  EXPECT_FALSE(read_layout(R"({"p": 4, "v": 2})").schedule.has_value());
  EXPECT_EQ(layout_to_json(read_layout(R"({"p": 4, "v": 2})"))["schedule"], "interleaved");
  EXPECT_EQ(layout_to_json(read_layout(R"({"p": 4})"))["schedule"], "1f1b");
  EXPECT_NE(refusal(v2(R"({"schedule": "zbv2"})")).find("plan.json: layout.schedule: expected gpipe, 1f1b"),
            std::string::npos);
  EXPECT_NE(refusal(v2(R"({"schedule": 3})")).find("plan.json: layout.schedule"), std::string::npos);
}

// plan_layout holds the layout to what kV1 says itself (2 positions, 1 chunk, 1f1b, one
// replica per stage, M 8, batch 8): every reader of a plan refuses these, naming the field.
TEST(LlmPlanLayout, ALayoutThatContradictsItsPlanIsRefusedByTheReader) {
  const std::string agree = R"("p": 2, "microbatches": 8, )";
  EXPECT_EQ(refusal(v2(R"({"p": 4, "microbatches": 8})")), "plan.json: layout.p: 4, but the plan has pipeline positions 2");
  EXPECT_EQ(refusal(v2("{" + agree + R"("v": 2})")), "plan.json: layout.v: 2, but the plan has chunks per position 1");
  EXPECT_EQ(refusal(v2("{" + agree + R"("schedule": "gpipe"})")),
            "plan.json: layout.schedule: gpipe, but the plan's schedule is 1f1b");
  EXPECT_EQ(refusal(v2(R"({"p": 2, "microbatches": 4})")), "plan.json: layout.microbatches: 4, but the plan has micro-batches 8");
  // b M r = 2 x 8 x 1 = 16 samples, the plan's batch_size is 8
  EXPECT_EQ(refusal(v2("{" + agree + R"("micro_batch": 2})")),
            "plan.json: layout.micro_batch: 2, but the plan has samples per micro-batch per replica (batch_size / "
            "(microbatches x replicas)) 8 / (8 x 1)");
  // d 4 with one replica per stage is one of the d pipelines (llm-plan --out): accepted
  EXPECT_EQ(plan_layout(plan_from_json(JsonReader::from_text(v2("{" + agree + R"("d": 4})"), "plan.json")))->d, 4);
}

}  // namespace
}  // namespace pipescope
