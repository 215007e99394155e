// Per-stage memory over the step, for the memory chart: static bytes (weights +
// gradients + optimizer state, StageReport.static_bytes) stacked under the
// activation bytes held over time (the simulator's memory samples). The curves are
// step functions; when several samples share a time the last one holds. Invariant:
// the largest static + activation value of a curve equals StageReport.peak_memory_bytes.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/report.h"

namespace pipescope::gui {

struct StageMemoryCurve {
  int stage = 0;                // pipeline position (device row)
  int64_t static_bytes = 0;
  std::vector<std::pair<int64_t, int64_t>> activation;  // (time ns, activation bytes) steps from t=0
  int64_t peak_bytes = 0;       // static + peak activation
  bool fits = true;
};

struct MemoryCurves {
  std::vector<StageMemoryCurve> stages;
  int64_t capacity_bytes = 0;   // 0: unbounded
  int64_t end_ns = 0;
  int64_t max_bytes() const;    // highest of the peaks and the capacity, for a shared y axis
};

MemoryCurves memory_curves(const StepReport& report);

// The most activation bytes held in each of `columns` equal slices of [0, end_ns): what
// one pixel column of a chart must show so that no peak is lost when a curve has more
// steps than the chart has pixels. A slice takes the value holding at its start and
// every step inside it.
std::vector<int64_t> column_max(const StageMemoryCurve& curve, int64_t end_ns, int columns);

}  // namespace pipescope::gui
