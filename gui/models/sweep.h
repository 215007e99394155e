// The K x M sweep behind the heat map: every cell is one plan, built and simulated
// with evaluate() (make_plan + simulate, timeline off) for the chosen schedule and
// the other choices of `base`. The best cell is the one with the highest throughput
// among the cells that fit the device memory; ties go to the first in row-major
// order (fewer stages, then fewer micro-batches). A cell whose plan is impossible
// (e.g. interleaved with M not a multiple of K, or more stages than devices) is
// invalid and carries the library's message.
//   SweepResult r = compute_sweep(in, {{1, 2, 4, 8}, {1, 2, 4, 8, 16, 32}});
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gui/models/plan_evaluation.h"

namespace pipescope::gui {

struct SweepAxes {
  std::vector<int> stages;        // rows
  std::vector<int> microbatches;  // columns
  // 0: every cell keeps the base micro-batch size (the batch grows with M) and uses K
  // devices. > 0: `pipescope plan`'s grid: the mini-batch is fixed at `batch` samples
  // (micro-batch size batch / M) and each cell uses all `devices`, r = devices / K;
  // a cell whose micro-batch does not split into whole samples per replica is invalid.
  int64_t batch = 0;
  int devices = 0;
};

struct SweepCell {
  int stages = 0;
  int microbatches = 0;
  bool valid = false;
  bool fits = false;
  double throughput = 0;          // samples/s
  int64_t step_ns = 0;
  double bubble_fraction = 0;
  int64_t peak_bytes = 0;
  std::string error;              // why an invalid cell is invalid
};

struct SweepResult {
  SweepAxes axes;
  std::string schedule;           // the schedule every cell uses, e.g. "1f1b"
  std::vector<SweepCell> cells;   // row-major: cells[r * columns + c]
  int best = -1;                  // index into cells, -1 when no cell fits
  bool cancelled = false;
  int rows() const { return static_cast<int>(axes.stages.size()); }
  int columns() const { return static_cast<int>(axes.microbatches.size()); }
  const SweepCell& at(int row, int column) const { return cells[row * columns() + column]; }
};

// Stages 1..devices and M = 1, 2, 4, ..., 128 (K capped at the profile's layers).
SweepAxes default_sweep_axes(int devices, int layers);
// `pipescope plan -D devices -N batch`'s grid: K over the divisors of D (at most
// `layers`), M over the divisors of N.
SweepAxes planner_sweep_axes(int devices, int64_t batch, int layers);

SweepCell evaluate_cell(const PlanInputs& base, const SweepAxes& axes, int stages, int microbatches);

// `progress(done, total)` is called after each cell; returning false cancels (the
// result then has cancelled = true and the remaining cells invalid).
SweepResult compute_sweep(const PlanInputs& base, const SweepAxes& axes,
                          const std::function<bool(int, int)>& progress = {});

// Index of the best cell by the rule above; -1 when none fits.
int best_cell(const std::vector<SweepCell>& cells);

}  // namespace pipescope::gui
