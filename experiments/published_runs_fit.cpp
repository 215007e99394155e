// Coordinate search of experiments/published_runs_fit.h: each parameter in turn tries a
// step up and down (starting at an eighth of its range), keeps what lowers the objective,
// halves its step after a sweep without gain, and stops when every step is below 1/512 of
// its range. Rows that fail to evaluate make the objective infinite, so a bound that breaks
// a row is never taken.
#include "experiments/published_runs_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pipescope {

std::vector<FitParameter> gpu_fit_parameters() {
  return {
      {"gpu.gemm.max_efficiency", 0.5, 0.95, [](GpuModel& g) -> double& { return g.gemm.max_efficiency; }},
      {"gpu.gemm.k_half", 0, 1024, [](GpuModel& g) -> double& { return g.gemm.k_half; }},
      {"gpu.gemm_fp8.tensor_scaled", 0.3, 0.95, [](GpuModel& g) -> double& { return g.fp8_tensor_efficiency; }},
      {"gpu.gemm_fp8.row_scaled", 0.2, 0.95, [](GpuModel& g) -> double& { return g.fp8_row_efficiency; }},
      {"gpu.attention.flash.forward_efficiency", 0.2, 0.9, [](GpuModel& g) -> double& { return g.flash.forward_efficiency; }},
      {"gpu.attention.flash.backward_efficiency", 0.15, 0.9,
       [](GpuModel& g) -> double& { return g.flash.backward_efficiency; }},
      {"gpu.attention.flash.seq_half", 0, 4096, [](GpuModel& g) -> double& { return g.flash.seq_half; }},
      {"gpu.memory_efficiency", 0.5, 0.95, [](GpuModel& g) -> double& { return g.memory_efficiency; }},
      {"gpu.collective_efficiency", 0.6, 0.95, [](GpuModel& g) -> double& { return g.collective_efficiency; }},
      {"link.latency_us", 1, 5, [](GpuModel& g) -> double& { return g.node.link.latency_us; }},
      {"nodes.link.latency_us", 2, 20, [](GpuModel& g) -> double& { return g.node.inter_node.latency_us; }},
  };
}

double fit_objective(const std::vector<PublishedRun>& runs, const GpuModel& gpu) {
  double sum = 0;
  for (const PublishedRun& run : runs) {
    try {
      const double e = std::log1p(predict_run(run, gpu).error);
      sum += e * e;
    } catch (const std::exception&) {
      return std::numeric_limits<double>::infinity();
    }
  }
  return runs.empty() ? 0 : sum / static_cast<double>(runs.size());
}

FitResult fit_gpu(const std::vector<PublishedRun>& runs, const GpuModel& start, const std::vector<FitParameter>& params,
                  const std::function<void(int, double)>& progress) {
  FitResult r;
  r.gpu = start;
  r.objective = fit_objective(runs, r.gpu);
  r.evaluations = 1;
  std::vector<double> step;
  for (const FitParameter& p : params) {
    double& v = p.field(r.gpu);
    v = std::clamp(v, p.lo, p.hi);
    step.push_back((p.hi - p.lo) / 8);
  }
  r.objective = fit_objective(runs, r.gpu);
  bool open = true;
  while (open) {
    open = false;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const FitParameter& p = params[i];
      if (step[i] < (p.hi - p.lo) / 512) continue;
      open = true;
      bool gained = false;
      for (double dir : {+1.0, -1.0}) {
        GpuModel trial = r.gpu;
        double& v = p.field(trial);
        const double next = std::clamp(v + dir * step[i], p.lo, p.hi);
        if (next == v) continue;
        v = next;
        const double obj = fit_objective(runs, trial);
        ++r.evaluations;
        if (obj < r.objective) {
          r.gpu = trial, r.objective = obj, gained = true;
          if (progress) progress(r.evaluations, r.objective);
          break;
        }
      }
      if (!gained) step[i] /= 2;
    }
  }
  for (const FitParameter& p : params) r.values.push_back(p.field(r.gpu));
  return r;
}

}  // namespace pipescope
