// Per-stage memory over the step, for the memory chart: static bytes (weights +
// gradients + optimizer state, PositionReport.static_bytes) under the activations stashed
// over time and, on top of them, the transients (core/op_rules.h: tensors received and
// sent, workspace, the loss gradient, output gradients held from I to W, all-reduce
// buffers) from the simulator's memory samples. The curves are step functions; when
// several samples share a time the last one holds. Invariant: the largest
// static + activation + transient value of a curve equals PositionReport.peak_memory_bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/report.h"

namespace pipescope::gui {

struct MemoryStep {
  int64_t time_ns = 0;
  int64_t activation_bytes = 0;  // the stash
  int64_t transient_bytes = 0;   // held beyond the stash at that moment
  int64_t weight_version_bytes = 0;  // asynchronous schedules: extra weight versions (drawn on the static band)
  int64_t above_static() const { return weight_version_bytes + activation_bytes + transient_bytes; }
  bool operator==(const MemoryStep&) const = default;
};

struct StageMemoryCurve {
  int stage = 0;                // pipeline position (device row)
  int64_t static_bytes = 0;
  std::vector<MemoryStep> steps;  // from t = 0, times increasing
  int64_t peak_bytes = 0;       // static + activations + transients at the highest point
  int64_t transient_bytes = 0;  // the transients' share of the peak (PositionReport.transient_bytes)
  bool fits = true;
  int64_t peak_transient_bytes() const;  // the largest transient value of any step
};

struct MemoryCurves {
  std::vector<StageMemoryCurve> stages;
  int64_t capacity_bytes = 0;   // 0: unbounded
  int64_t end_ns = 0;
  int64_t max_bytes() const;    // highest of the peaks and the capacity, for a shared y axis
  bool has_transients() const;  // some stage holds transients at some moment
  bool has_weight_versions() const;  // some stage holds an extra weight version (pipedream, 2bw)
};

MemoryCurves memory_curves(const StepReport& report);

// The most bytes above the static ones (activations + transients) held in each of
// `columns` equal slices of [0, end_ns): what one pixel column of a chart must show so
// that no peak is lost when a curve has more steps than the chart has pixels. A slice
// takes the value holding at its start and every step inside it.
std::vector<int64_t> column_max(const StageMemoryCurve& curve, int64_t end_ns, int columns);

}  // namespace pipescope::gui
