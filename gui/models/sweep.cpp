#include "gui/models/sweep.h"

#include <algorithm>
#include <exception>

#include "core/error.h"

namespace pipescope::gui {

SweepAxes default_sweep_axes(int devices, int layers) {
  SweepAxes a;
  for (int k = 1; k <= std::min(devices, layers); ++k) a.stages.push_back(k);
  for (int m = 1; m <= 128; m *= 2) a.microbatches.push_back(m);
  return a;
}

SweepAxes planner_sweep_axes(int devices, int64_t batch, int layers) {
  SweepAxes a;
  a.batch = batch;
  a.devices = devices;
  for (int k = 1; k <= std::min(devices, layers); ++k) {
    if (devices % k == 0) a.stages.push_back(k);
  }
  for (int64_t m = 1; m <= batch; ++m) {
    if (batch % m == 0) a.microbatches.push_back(static_cast<int>(m));
  }
  return a;
}

SweepCell evaluate_cell(const PlanInputs& base, const SweepAxes& axes, int stages, int microbatches) {
  SweepCell cell;
  cell.stages = stages;
  cell.microbatches = microbatches;
  PlanInputs in = base;
  in.choice.stages = stages;
  in.choice.microbatches = microbatches;
  if (axes.batch > 0) {
    const int64_t samples = axes.batch / microbatches;
    in.choice.microbatch_size = static_cast<double>(samples);
    in.choice.replicas = axes.devices / stages;
    if (samples % in.choice.replicas != 0) {  // as `pipescope plan`: whole samples per replica
      cell.error = "a micro-batch of " + std::to_string(samples) + " samples does not split over " +
                   std::to_string(in.choice.replicas) + " replicas";
      return cell;
    }
  }
  in.record_timeline = false;
  try {
    Evaluation e = evaluate(in);
    cell.valid = true;
    cell.fits = e.report.fits();
    cell.throughput = e.report.throughput_samples_per_s;
    cell.step_ns = e.report.step_ns;
    cell.bubble_fraction = e.report.bubble_fraction;
    cell.peak_bytes = e.report.peak_memory_bytes();
  } catch (const InputError& err) {
    cell.error = err.what();
  }
  return cell;
}

int best_cell(const std::vector<SweepCell>& cells) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(cells.size()); ++i) {
    const SweepCell& c = cells[i];
    if (!c.valid || !c.fits) continue;
    if (best < 0 || c.throughput > cells[best].throughput) best = i;
  }
  return best;
}

SweepResult compute_sweep(const PlanInputs& base, const SweepAxes& axes,
                          const std::function<bool(int, int)>& progress) {
  SweepResult r;
  r.axes = axes;
  r.schedule = to_string(base.choice.schedule);
  const int total = r.rows() * r.columns();
  r.cells.reserve(total);
  for (int k : axes.stages) {
    for (int m : axes.microbatches) {
      if (r.cancelled) {
        SweepCell skipped;
        skipped.stages = k;
        skipped.microbatches = m;
        skipped.error = "cancelled";
        r.cells.push_back(skipped);
        continue;
      }
      r.cells.push_back(evaluate_cell(base, axes, k, m));
      if (progress && !progress(static_cast<int>(r.cells.size()), total)) r.cancelled = true;
    }
  }
  r.best = best_cell(r.cells);
  return r;
}

}  // namespace pipescope::gui
