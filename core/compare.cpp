// Prediction vs measurement, value by value: over the same stages (StageMatch::Exact),
// or over those both reports have, with a warning naming the difference (Common).
#include "core/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.h"

namespace pipescope {

double ComparedValue::relative_error() const {
  if (predicted == 0) return measured == 0 ? 0.0 : INFINITY;
  return (measured - predicted) / predicted;
}

Comparison compare_reports(const StepReport& p, const StepReport& m, StageMatch match) {
  if (match == StageMatch::Exact && p.positions.size() != m.positions.size()) {
    throw InputError("compare: the prediction has " + std::to_string(p.positions.size()) +
                     " stages but the measurement has " + std::to_string(m.positions.size()));
  }
  Comparison c;
  auto warn_if = [&](bool differ, const std::string& what) {
    if (differ) c.warnings.push_back("the reports differ in " + what);
  };
  warn_if(p.schedule != m.schedule, "schedule (" + p.schedule + " vs " + m.schedule + ")");
  warn_if(p.microbatches != m.microbatches, "micro-batches");
  warn_if(p.batch_size != m.batch_size, "batch size");
  warn_if(p.recompute != m.recompute, "re-materialisation");
  warn_if(p.chunks != m.chunks, "chunks");
  warn_if(p.offload != m.offload, "offload (" + p.offload + " vs " + m.offload + ")");
  c.values.push_back({"step_time_ms", p.step_ns / 1e6, m.step_ns / 1e6});
  if (p.steps > 1 && m.steps > 1) {  // several steps (pipedream, 2bw, simulate --steps): once the pipeline filled
    warn_if(p.steps != m.steps, "steps (" + std::to_string(p.steps) + " vs " + std::to_string(m.steps) + ")");
    c.values.push_back({"steady_state_step_time_ms", p.steady_state_step_ns / 1e6, m.steady_state_step_ns / 1e6});
  }
  c.values.push_back({"throughput_samples_per_s", p.throughput_samples_per_s, m.throughput_samples_per_s});
  c.values.push_back({"bubble_fraction", p.bubble_fraction, m.bubble_fraction});
  warn_if(p.positions.size() != m.positions.size(), "stages (" + std::to_string(p.positions.size()) + " vs " +
                                                  std::to_string(m.positions.size()) + "; those both have are compared)");
  for (std::size_t s = 0; s < std::min(p.positions.size(), m.positions.size()); ++s) {
    const PositionReport &a = p.positions[s], &b = m.positions[s];
    const std::string st = "stage " + std::to_string(a.index) + " ";
    c.values.push_back({st + "busy_ms", a.busy_ns / 1e6, b.busy_ns / 1e6});
    // The peak by category: a difference in the total names its cause.
    c.values.push_back({st + "weight_bytes", double(a.weight_bytes), double(b.weight_bytes)});
    c.values.push_back({st + "gradient_bytes", double(a.gradient_bytes), double(b.gradient_bytes)});
    c.values.push_back({st + "optimizer_bytes", double(a.optimizer_bytes), double(b.optimizer_bytes)});
    if (a.weight_version_bytes > 0 || b.weight_version_bytes > 0) {  // asynchronous: the kept weight versions
      c.values.push_back({st + "weight_version_bytes", double(a.weight_version_bytes), double(b.weight_version_bytes)});
    }
    c.values.push_back({st + "peak_activation_bytes", double(a.peak_activation_bytes), double(b.peak_activation_bytes)});
    c.values.push_back({st + "transient_bytes", double(a.transient_bytes), double(b.transient_bytes)});
    c.values.push_back({st + "peak_memory_bytes", double(a.peak_memory_bytes), double(b.peak_memory_bytes)});
    if (p.offload != "none" || m.offload != "none") {  // activation offload: the host side
      c.values.push_back({st + "offloaded_bytes", double(a.offloaded_bytes), double(b.offloaded_bytes)});
      c.values.push_back({st + "host_peak_bytes", double(a.host_peak_bytes), double(b.host_peak_bytes)});
    }
  }
  return c;
}

Json comparison_to_json(const Comparison& c) {
  Json values = Json::array();
  for (const ComparedValue& v : c.values) {
    double e = v.relative_error();
    values.push_back({{"name", v.name},
                      {"predicted", v.predicted},
                      {"measured", v.measured},
                      {"relative_error", std::isfinite(e) ? Json(e) : Json(nullptr)}});
  }
  return {{"format", "pipescope.comparison"}, {"version", 1}, {"values", values}, {"warnings", c.warnings}};
}

std::string comparison_table(const Comparison& c) {
  std::ostringstream out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-34s %16s %16s %10s\n", "quantity", "predicted", "measured", "error");
  out << buf;
  for (const ComparedValue& v : c.values) {
    double e = v.relative_error();
    char err[32];
    if (std::isfinite(e)) {
      std::snprintf(err, sizeof err, "%+.1f%%", 100 * e);
    } else {
      std::snprintf(err, sizeof err, "n/a");
    }
    std::snprintf(buf, sizeof buf, "%-34s %16.6g %16.6g %10s\n", v.name.c_str(), v.predicted, v.measured, err);
    out << buf;
  }
  for (const std::string& w : c.warnings) out << "warning: " << w << "\n";
  return out.str();
}

}  // namespace pipescope
