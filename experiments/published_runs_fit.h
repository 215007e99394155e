// Fits a GPU file's efficiency parameters to published runs (experiments/published_runs.h):
// each parameter is one physical quantity of the GPU file with a bound (a GEMM class's
// efficiency, the fused attention kernel's, HBM and collective efficiency, a link's
// latency), never a factor per model, framework or row. The fit minimises the mean squared
// log error of the rows' metric by coordinate search inside the bounds, deterministic (the
// same rows and start give the same numbers). Invariant: only the rows it is given are
// read; the fit set is profiles/published-runs/h100-fit.json, and docs/llm-scale.md names
// the rows each parameter moved.
//   FitResult r = fit_gpu(runs, load_gpu("h100-sxm"), gpu_fit_parameters());
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "experiments/published_runs.h"

namespace pipescope {

struct FitParameter {
  std::string name;  // the GPU file's field: "gpu.gemm.max_efficiency", "nodes.link.latency_us"
  double lo = 0, hi = 0;
  std::function<double&(GpuModel&)> field;
};
// The parameters fitted on H100: the bf16 GEMM curve's max_efficiency and k_half, the fp8
// classes', the flash kernel's forward / backward efficiency and seq_half, HBM and collective
// efficiency, and the per-hop latency of NVLink and of the network.
std::vector<FitParameter> gpu_fit_parameters();

struct FitResult {
  GpuModel gpu;                // the start with the fitted values
  std::vector<double> values;  // one per parameter
  double objective = 0;        // mean squared log(predicted / published)
  int evaluations = 0;
};
// `progress` (optional) is told each improvement: (evaluations, objective).
FitResult fit_gpu(const std::vector<PublishedRun>& runs, const GpuModel& start, const std::vector<FitParameter>& params,
                  const std::function<void(int, double)>& progress = {});
// The objective at `gpu` (what fit_gpu minimises).
double fit_objective(const std::vector<PublishedRun>& runs, const GpuModel& gpu);

}  // namespace pipescope
