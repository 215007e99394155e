// The pipescope.llm_plan file (llm/llm_plan_json.h): a search written and read back gives
// the same candidates field for field and the same bytes; what `pipescope llm-plan --json`
// prints reads back, and `validate` reads it; the committed fixture reads with the counts its README states; and
// each kind of bad file throws InputError naming the file and the JSON path of the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "llm/llm_plan_json.h"
#include "llm/plan_layout.h"
#include "tests/support/cli_run.h"
#include "tests/support/input_error.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

using testing::input_error_of;
using testing::run_cli;

const std::string kFixture = std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/llm_plan/moe-32gpus-top40.json";

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void expect_same_candidates(const LlmSearchResult& a, const LlmSearchResult& b) {
  ASSERT_EQ(a.best.size(), b.best.size());
  for (std::size_t i = 0; i < a.best.size(); ++i) {
    const LlmCandidate &x = a.best[i], &y = b.best[i];
    SCOPED_TRACE("best[" + std::to_string(i) + "]");
    EXPECT_EQ(layout_to_json(x.layout), layout_to_json(y.layout));
    EXPECT_EQ(x.step_ns, y.step_ns);
    EXPECT_EQ(x.bound_ns, y.bound_ns);
    EXPECT_EQ(x.pipeline_ns, y.pipeline_ns);
    EXPECT_EQ(x.dp_exposed_ns, y.dp_exposed_ns);
    EXPECT_EQ(x.sharding_ns, y.sharding_ns);
    EXPECT_EQ(x.bubble, y.bubble);
    EXPECT_EQ(x.mfu, y.mfu);
    EXPECT_EQ(x.peak_bytes, y.peak_bytes);
    EXPECT_EQ(x.schedule, y.schedule);
    EXPECT_EQ(x.vocabulary, y.vocabulary);
    ASSERT_EQ(x.ranks.size(), y.ranks.size());  // p of a fresh search's, none of a file before them
    for (std::size_t k = 0; k < x.ranks.size(); ++k) {
      EXPECT_EQ(x.ranks[k].total(), y.ranks[k].total());
      EXPECT_EQ(x.ranks[k].activation_bytes, y.ranks[k].activation_bytes);
    }
  }
  EXPECT_EQ(a.why, b.why);
  EXPECT_EQ(a.lost, b.lost);
  EXPECT_EQ(a.capacity, b.capacity);
  EXPECT_EQ(a.factorizations, b.factorizations);
  EXPECT_EQ(a.enumerated, b.enumerated);
  EXPECT_EQ(a.valid, b.valid);
  EXPECT_EQ(a.fitting, b.fitting);
  EXPECT_EQ(a.simulated, b.simulated);
}

// The small dense model of cli_llm_plan_test.cpp on 16 H100s, searched in-process.
LlmPlanFile small_file(int top) {
  LlmPlanFile f;
  LlmSearchRequest q;
  TransformerShape& s = q.shape;
  s.name = "small";
  s.layers = 8, s.hidden = 1024, s.heads = 16, s.kv_heads = 4, s.ffn_hidden = 4096, s.swiglu = true;
  s.bias_linear = false, s.rms_norm = true, s.tied_embeddings = false, s.vocabulary = 32000, s.sequence = 2048;
  q.gpus = 16, q.global_batch = 64, q.top = top;
  f.model = s.name, f.gpu = "h100-sxm", f.gpus = q.gpus, f.global_batch = q.global_batch;
  f.result = search_layouts(q, load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/h100-sxm.json"));
  return f;
}

TEST(LlmPlanJson, WriteThenReadGivesTheSameCandidatesAndBytes) {
  const LlmPlanFile f = small_file(12);
  ASSERT_EQ(f.result.best.size(), 12U);
  const std::string text = llm_plan_result_to_json(f).dump(1);
  const LlmPlanFile back = llm_plan_result_from_json(JsonReader::from_text(text, "r.json"));
  EXPECT_EQ(back.model, "small");
  EXPECT_EQ(back.gpu, "h100-sxm");
  EXPECT_EQ(back.gpus, 16);
  EXPECT_EQ(back.global_batch, 64);
  EXPECT_EQ(back.framework, Framework::Megatron);
  expect_same_candidates(f.result, back.result);
  EXPECT_EQ(llm_plan_result_to_json(back).dump(1), text);
}

TEST(LlmPlanJson, ReadsWhatLlmPlanJsonPrintsByteForByte) {
  const std::string dir = ::testing::TempDir() + "llm_plan_json";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/r.json";
  const auto r = run_cli(
      "llm-plan --gpu h100-sxm --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --num-query-groups 4 "
      "--ffn-hidden-size 4096 --swiglu --disable-bias-linear --normalization RMSNorm "
      "--untie-embeddings-and-output-weights --vocab-size 32000 --seq-length 2048 --gpus 16 --global-batch-size 64 "
      "--framework torch --top 4 --json > " + path);
  ASSERT_EQ(r.code, 0) << r.out;
  const LlmPlanFile f = read_llm_plan_result(path);
  EXPECT_EQ(f.framework, Framework::Torch);
  EXPECT_EQ(f.result.best.size(), 4U);
  EXPECT_EQ(f.result.lost.size(), 3U);
  EXPECT_EQ(llm_plan_result_to_json(f).dump(1) + "\n", text_of(path));
  std::filesystem::remove_all(dir);
}

// The counts tests/data/llm_plan/README.md states for the fixture.
TEST(LlmPlanJson, TheFixtureReadsWithTheCountsItsReadmeStates) {
  const LlmPlanFile f = read_llm_plan_result(kFixture);
  const LlmSearchResult& r = f.result;
  ASSERT_EQ(r.best.size(), 40U);
  int t2 = 0, none = 0;
  for (const LlmCandidate& c : r.best) {
    t2 += c.layout.t == 2 ? 1 : 0;
    none += c.layout.sharding == Sharding::None ? 1 : 0;
  }
  EXPECT_EQ(t2, 10);
  EXPECT_EQ(none, 5);
  EXPECT_EQ(r.capacity, 80e9);
  EXPECT_EQ(r.enumerated, 14466);
  EXPECT_EQ(r.simulated, 449);
  EXPECT_EQ(r.lost.size(), 39U);
  EXPECT_EQ(r.why.size(), 11U);  // t, sp, cp, ep, p, d, v, schedule, b, recompute, sharding
  EXPECT_EQ(r.best.front().step_ns, 1501054612);  // "step_ms": 1501.054612
  EXPECT_EQ(llm_plan_result_to_json(f).dump(1) + "\n", text_of(kFixture));
}

// The fixture with one change, read as "r.json".
std::string refusal(void (*edit)(Json&)) {
  Json j = Json::parse(text_of(kFixture));
  edit(j);
  return input_error_of([&] { llm_plan_result_from_json(JsonReader::from_text(j.dump(), "r.json")); });
}

TEST(LlmPlanJson, BadFilesNameTheFileAndTheField) {
  EXPECT_EQ(refusal([](Json& j) { j["format"] = "pipescope.plan"; }),
            "r.json: format: expected \"pipescope.llm_plan\", got \"pipescope.plan\"");
  EXPECT_EQ(refusal([](Json& j) { j["version"] = 2; }), "r.json: version: expected an integer <= 1, got 2");
  EXPECT_EQ(refusal([](Json& j) { j.erase("gpus"); }), "r.json: gpus: missing required field");
  EXPECT_EQ(refusal([](Json& j) { j["best"][0].erase("step_ms"); }), "r.json: best[0].step_ms: missing required field");
  EXPECT_EQ(refusal([](Json& j) { j["best"][2]["step_ms"] = "fast"; }),
            "r.json: best[2].step_ms: expected a number, got string");
  EXPECT_EQ(refusal([](Json& j) { j["best"][2]["step_ms"] = -1; }),
            "r.json: best[2].step_ms: expected a number >= 0, got -1");
  EXPECT_EQ(refusal([](Json& j) { j["best"][1]["layout"]["sharding"] = "zero-4"; }),
            "r.json: best[1].layout.sharding: expected none, distributed-optimizer, zero-1, zero-2 or zero-3, got "
            "\"zero-4\"");
  EXPECT_EQ(refusal([](Json& j) { j["best"][1]["layout"]["t"] = 0; }),
            "r.json: best[1].layout.t: expected an integer >= 1, got 0");
  EXPECT_EQ(refusal([](Json& j) { j["best"][3]["layout"]["t"] = 4; }),
            "r.json: best[3].layout: t x cp x d x p = 64, expected gpus = 32");
  EXPECT_EQ(refusal([](Json& j) { j["best"][0]["layout"]["microbatches"] = 3; }),
            "r.json: best[0].layout: micro_batch x microbatches x d = 96, expected global_batch = 128");
  EXPECT_EQ(refusal([](Json& j) { j["best"] = Json::array(); }),
            "r.json: best: expected at least one layout (llm-plan writes the best first)");
  EXPECT_EQ(refusal([](Json& j) { j["best"] = 3; }), "r.json: best: expected an array, got number");
  EXPECT_EQ(refusal([](Json& j) {
              j["best"][1]["step_ms"] = 1000;
              j["best"][1]["bound_ms"] = 900;
            }),
            "r.json: best[1].step_ms: expected at least the step before it (best is fastest first)");
  EXPECT_EQ(refusal([](Json& j) { j["best"][0]["bound_ms"] = 1e6; }),
            "r.json: best[0].bound_ms: expected at most step_ms (a lower bound on it)");
  EXPECT_EQ(refusal([](Json& j) { j["best"][0]["peak_bytes"] = 9e10; }),
            "r.json: best[0].peak_bytes: expected at most capacity_bytes - headroom_bytes = 80000000000 (a layout "
            "that fits), got 90000000000");
  // headroom_bytes (absent in the fixture: 0) takes from what fits
  EXPECT_EQ(refusal([](Json& j) { j["headroom_bytes"] = 2e10; }),
            "r.json: best[0].peak_bytes: expected at most capacity_bytes - headroom_bytes = 60000000000 (a layout "
            "that fits), got 61993690624");
  EXPECT_EQ(refusal([](Json& j) { j["headroom_bytes"] = 9e10; }),
            "r.json: headroom_bytes: expected a number <= 80000000000, got 90000000000");
  EXPECT_EQ(refusal([](Json& j) { j["best"][0]["schedule"] = "interleaved"; }),
            "r.json: best[0].schedule: expected \"1f1b\", the layout's (layout.schedule, else 1f1b or interleaved by v), "
            "got \"interleaved\"");
  EXPECT_EQ(refusal([](Json& j) { j["best"][0]["mfu"] = 1.5; }), "r.json: best[0].mfu: expected a number <= 1, got 1.5");
  EXPECT_EQ(refusal([](Json& j) { j["framework"] = "jax"; }),
            "r.json: framework: expected megatron, torch or deepspeed, got \"jax\"");
  EXPECT_EQ(refusal([](Json& j) { j["search"]["valid"] = 20000; }),
            "r.json: search.valid: expected an integer <= 14466, got 20000");
  EXPECT_EQ(refusal([](Json& j) { j["search"]["simulated"] = 39; }),
            "r.json: search.simulated: expected at least the 40 layouts in best, got 39");
  EXPECT_EQ(refusal([](Json& j) { j["runner_ups"].erase(0); }),
            "r.json: runner_ups: expected one line per runner-up, 39, got 38");
  EXPECT_EQ(refusal([](Json& j) { j["why"][0] = 7; }), "r.json: why[0]: expected a string, got number");
  EXPECT_EQ(refusal([](Json& j) { j = Json::array(); }), "r.json: (top level): expected an object, got array");
}

TEST(LlmPlanJson, ValidateReadsItWithTheSameReader) {
  const auto ok = run_cli("validate " + kFixture);
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(ok.out, kFixture + ": ok (pipescope.llm_plan v1)\n");
  const std::string dir = ::testing::TempDir() + "llm_plan_validate";
  std::filesystem::create_directories(dir);
  Json j = Json::parse(text_of(kFixture));
  j["best"][2]["step_ms"] = -1;
  std::ofstream(dir + "/r.json") << j.dump();
  const auto bad = run_cli("validate " + dir + "/r.json");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find(dir + "/r.json: best[2].step_ms: expected a number >= 0, got -1"), std::string::npos) << bad.out;
  std::filesystem::remove_all(dir);
}

// Issue 56: a result whose layout its framework does not run validated. The reader holds each
// layout to framework_refusal (what validate_job refuses without the model): DeepSpeed runs
// only its 1F1B TrainSchedule, so interleaved with v 4 is refused, naming the field. The file
// is `llm-plan --framework deepspeed --json`'s (the fuzz corpus's seed), its best layout made
// interleaved over p 4 with the same GPUs (t cp d p = 16) and batch (b M d = 64).
TEST(LlmPlanJson, ALayoutItsFrameworkDoesNotRunIsRefused) {
  Json j = Json::parse(text_of(std::string(PIPESCOPE_SOURCE_DIR) + "/fuzz/corpus/llm_plan/deepspeed-moe-10gb.json"));
  ASSERT_EQ(j["framework"], "deepspeed");
  Json& layout = j["best"][0]["layout"];
  layout["d"] = 4, layout["p"] = 4, layout["v"] = 4, layout["microbatches"] = 8;
  j["best"][0]["schedule"] = "interleaved";
  const std::string dir = ::testing::TempDir() + "llm_plan_framework";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/r.json") << j.dump();
  const auto bad = run_cli("validate " + dir + "/r.json");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find(dir + "/r.json: best[0].layout.schedule: --schedule: interleaved is not a schedule DeepSpeed "
                               "runs (it runs 1f1b)"),
            std::string::npos)
      << bad.out;
  std::filesystem::remove_all(dir);
}

TEST(LlmPlanJson, TruncatedAndMissingFilesNameTheFile) {
  const std::string text = text_of(kFixture);
  const std::string cut =
      input_error_of([&] { llm_plan_result_from_json(JsonReader::from_text(text.substr(0, text.size() / 2), "r.json")); });
  // the parser names the field it stood at when the text ended (the fixture cut in half)
  EXPECT_EQ(cut, "r.json: best[27].layout.t: invalid JSON: parse error at line 972, column 9: syntax error while "
                 "parsing object key - invalid string: missing closing quote; last read: '\"tp_'; expected string "
                 "literal");
  EXPECT_EQ(input_error_of([] { read_llm_plan_result("/nonexistent/r.json"); }), "/nonexistent/r.json: cannot open file");
}

}  // namespace
}  // namespace pipescope
