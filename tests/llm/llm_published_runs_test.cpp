// The published H100 runs (profiles/published-runs/h100-fit.json) through their reader and
// the job model (experiments/published_runs.h):
//  - every row is expressible and each row's prediction is pinned
//    (tests/llm/published_runs_expected.json, written by `published_runs --json`), so a
//    change to the cost model shows row by row;
//  - the accuracy the GPU file's fitted parameters reach on them (docs/llm-scale.md);
//  - the metric conversions against the sources' own formulas;
//  - bad rows are refused naming the file, the row and the field.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "core/error.h"
#include "experiments/published_runs.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

std::string runs_file() { return std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/published-runs/h100-fit.json"; }

std::vector<RunPrediction> predict_all(const std::vector<PublishedRun>& runs) {
  std::vector<RunPrediction> out;
  for (const PublishedRun& run : runs) out.push_back(predict_run(run, load_gpu(run.job.cluster.gpu)));
  return out;
}

TEST(PublishedRuns, EveryRowIsExpressibleAndPinned) {
  const std::vector<PublishedRun> runs = load_published_runs(runs_file());
  ASSERT_EQ(runs.size(), 116u);  // published-runs.md: 77 llm-foundry, 30 torchtitan, 9 Megatron-LM
  const std::vector<RunPrediction> predictions = predict_all(runs);
  const JsonReader expected =
      JsonReader::from_file(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/llm/published_runs_expected.json");
  std::map<std::string, double> pinned;
  for (const JsonReader& row : expected["rows"].items()) pinned[row["id"].as_string()] = row["predicted"].as_double();
  ASSERT_EQ(pinned.size(), runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ASSERT_TRUE(pinned.count(runs[i].id)) << runs[i].id;
    EXPECT_NEAR(predictions[i].predicted, pinned[runs[i].id], 1e-6 * pinned[runs[i].id])
        << runs[i].id << ": regenerate tests/llm/published_runs_expected.json with `build/bin/published_runs --json -o "
                         "tests/llm/published_runs_expected.json` when the change is meant";
  }
}

// The accuracy docs/llm-scale.md reports, held: median and worst |error| over the 116 rows
// (4.9% and 28.2% with the fitted h100-sxm.json; the issue's goal is 5% and 12%: the worst
// rows and why are in docs/llm-scale.md).
TEST(PublishedRuns, FittedGpuFilePredictsTheFitSet) {
  const std::vector<PublishedRun> runs = load_published_runs(runs_file());
  std::vector<double> errors;
  for (const RunPrediction& p : predict_all(runs)) errors.push_back(p.error);
  const ErrorSummary s = summarize_errors(errors);
  EXPECT_LE(s.median_abs, 0.05);
  EXPECT_LE(s.worst_abs, 0.29);
}

// Megatron-Core r0.8.0's num_floating_point_operations on GPT-3 175B-like numbers, by hand:
// 12 B s L h^2 [(1 + G/a + s/h)(a k / h) + f/h + V / (2 L h)] with G = a, k = h / a, f = 4 h:
// 12 x 1 x 2048 x 96 x 12288^2 x (2 + 2048/12288 + 4 + 51200 / (2 x 96 x 12288)).
TEST(PublishedRuns, MegatronFlopsAreTheR080Formula) {
  TransformerShape s;
  s.layers = 96, s.hidden = 12288, s.heads = 96, s.sequence = 2048, s.vocabulary = 51200, s.ffn_hidden = 4 * 12288;
  const double h = 12288, expected = 12.0 * 2048 * 96 * h * h * (2 + 2048 / h + 4 + 51200 / (2 * 96 * h));
  EXPECT_NEAR(megatron_r080_flops(s, 1), expected, 1e-9 * expected);
  s.swiglu = true;  // the MLP term x 3/2
  EXPECT_NEAR(megatron_r080_flops(s, 1), expected + 12.0 * 2048 * 96 * h * h * 4 * 0.5, 1e-9 * expected);
}

// tokens/s per GPU = global batch x sequence / (step x GPUs), whatever the layout.
TEST(PublishedRuns, TokensPerSecondIsTheSourcesDefinition) {
  const std::vector<PublishedRun> runs = load_published_runs(runs_file());
  for (const PublishedRun& run : runs) {
    if (run.metric != RunMetric::TokensPerSecondPerGpu) continue;
    const RunPrediction p = predict_run(run, load_gpu(run.job.cluster.gpu));
    const ParallelLayout& l = run.job.layout;
    const double expected = static_cast<double>(l.global_batch()) * run.job.shape.sequence /
                            (static_cast<double>(p.step_ns()) * 1e-9 * l.gpus());
    EXPECT_NEAR(p.predicted, expected, 1e-9 * expected) << run.id;
  }
}

std::string refusal(const std::string& text) {
  try {
    published_runs_from_json(JsonReader::from_text(text, "runs.json"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// One valid row (torchtitan's 8B FSDP on 8 GPUs) to break field by field.
std::string row(const std::string& replace_from = "", const std::string& replace_to = "") {
  std::string r = R"({"id": "r", "source": {"repo": "pytorch/torchtitan", "path": "b.md", "commit": "abc"},
    "framework": "torch", "framework_version": "torchtitan", "gpu": "h100-sxm", "precision": "bf16",
    "model": {"name": "L", "layers": 32, "hidden": 4096, "heads": 32, "kv_groups": 8, "ffn": 14336,
              "vocab": 128256, "swiglu": true, "norm": "RMSNorm", "bias": false, "tied": false, "pos": "rope"},
    "seq_length": 8192, "global_batch": 16, "micro_batch": 2, "gpus": 8, "t": 1, "sp": false, "cp": 1,
    "p": 1, "v": 1, "ep": 1, "d": 8, "recompute": "selective", "sharding": "zero-3",
    "overlap_grad_reduce": true, "overlap_param_gather": true, "assumed": [],
    "metric": {"kind": "tokens_per_s_per_gpu", "value": 5762}, "extra_published": {"torch_compile": false},
    "notes": ""})";
  if (!replace_from.empty()) {
    const std::size_t at = r.find(replace_from);
    EXPECT_NE(at, std::string::npos) << replace_from;
    r.replace(at, replace_from.size(), replace_to);
  }
  std::string out = "[";
  out.append(r).append("]");
  return out;
}

TEST(PublishedRuns, BadRowsAreRefusedNamingFileRowAndField) {
  EXPECT_EQ(refusal(row()), "");
  EXPECT_EQ(refusal("{}"), "runs.json: (top level): expected an array of published runs");
  EXPECT_EQ(refusal(row("\"gpus\": 8", "\"gpus\": 16")), "runs.json: [0].gpus: 16, but t x cp x d x p = 8");
  EXPECT_EQ(refusal(row("\"norm\": \"RMSNorm\"", "\"norm\": \"Batch\"")),
            "runs.json: [0].model.norm: expected LayerNorm or RMSNorm, got \"Batch\"");
  EXPECT_EQ(refusal(row("\"global_batch\": 16", "\"global_batch\": 17")),
            "runs.json: [0].global_batch: 17 is not a multiple of micro_batch x d = 16");
  EXPECT_EQ(refusal(row("\"tokens_per_s_per_gpu\"", "\"mfu\"")),
            "runs.json: [0].metric.kind: expected tokens_per_s_per_gpu or megatron_tflops_per_gpu, got \"mfu\"");
  EXPECT_EQ(refusal(row("\"precision\": \"bf16\"", "\"precision\": \"fp8\", \"fp8_recipe\": \"blockwise\"")),
            "runs.json: [0].fp8_recipe: expected delayed, tensorwise, rowwise or mxfp8, got \"blockwise\"");
  EXPECT_NE(refusal(row("\"heads\": 32", "\"heads\": 30")).find("runs.json: [0]: the row's layout is refused"),
            std::string::npos);
  const std::string one = row();
  std::string two = one.substr(0, one.size() - 1);
  two.append(",").append(one.substr(1));
  EXPECT_EQ(refusal(two), "runs.json: [1].id: \"r\" appears twice");
}

}  // namespace
}  // namespace pipescope
