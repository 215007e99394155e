// Published training runs predicted by llm/'s job model: each row of a published-runs
// file (profiles/published-runs/h100-fit.json: 116 H100 runs of llm-foundry, torchtitan and
// Megatron-LM, each naming its source and commit) becomes one Job with its own layout,
// is evaluated by evaluate_job, and its step is converted to the source's own metric
// (tokens/s per GPU, or Megatron-Core r0.8.0's model TFLOP/s per GPU). Invariant: a row is
// predicted from its published fields alone; what the source does not publish is the
// row's "assumed" list plus the assumptions this reader states (PublishedRun::assumed).
//   auto runs = load_published_runs("profiles/published-runs/h100-fit.json");
//   RunPrediction p = predict_run(runs[0], load_gpu("h100-sxm"));  // p.error
#pragma once

#include <string>
#include <vector>

#include "core/json_reader.h"
#include "llm/gpu_model.h"
#include "llm/job.h"

namespace pipescope {

enum class RunMetric : uint8_t { TokensPerSecondPerGpu, MegatronTflopsPerGpu };

struct PublishedRun {
  std::string id;
  std::string source;          // "repo path @ commit, table"
  std::string framework_name;  // the row's framework_version
  Job job;                     // shape, layout (validated), framework; cluster.gpu = the row's gpu
  double hbm_gb_per_s = 0;     // the row's gpu_overrides (0: the GPU file's)
  double memory_bytes = 0;
  RunMetric metric = RunMetric::TokensPerSecondPerGpu;
  double published = 0;        // the metric as the source prints it
  std::vector<std::string> assumed;  // the row's own and this reader's
};

// Reads a published-runs file (a JSON array of rows, profiles/published-runs/README.md).
// Throws InputError naming the file, the row ([i]) and the field.
std::vector<PublishedRun> load_published_runs(const std::string& path);
std::vector<PublishedRun> published_runs_from_json(const JsonReader& rows);

// The GPU a row ran on: `gpu` with the row's overrides (torchtitan's 96 GB HBM2e H100s).
GpuModel run_gpu(const PublishedRun& run, const GpuModel& gpu);

struct RunPrediction {
  JobReport report;
  double predicted = 0;  // in the row's metric
  double error = 0;      // predicted / published - 1
  int64_t step_ns() const { return report.time.step_ns; }
};
// `gpu`: the row's GPU file (h100-sxm for every row of the fit set), before the overrides.
RunPrediction predict_run(const PublishedRun& run, const GpuModel& gpu);

// Megatron-Core r0.8.0's num_floating_point_operations (megatron/training/training.py at
// tag core_r0.8.0) for one step of `global_batch` sequences: the metric's numerator.
double megatron_r080_flops(const TransformerShape& shape, int global_batch);

// Groups a row falls in, for the summary: "seq 8192", "gpus 8", "megatron", "fp8", "t8 p1 cp1 ep1".
std::vector<std::string> run_groups(const PublishedRun& run);

struct ErrorSummary {
  int rows = 0;
  double median_abs = 0, worst_abs = 0, mean_signed = 0;
};
ErrorSummary summarize_errors(const std::vector<double>& errors);

// The whole table: per-row published / predicted / error, then median and worst |error| by
// group. Markdown for docs/llm-scale.md.
std::string published_runs_markdown(const std::vector<PublishedRun>& runs, const std::vector<RunPrediction>& predictions);
// One pipescope.published_runs object: {"format", "version", "rows": [...], "summary": {...}}.
Json published_runs_json(const std::vector<PublishedRun>& runs, const std::vector<RunPrediction>& predictions);

}  // namespace pipescope
