// gui/models/planner_plan_set.h: one row per candidate, in the search's order.
#include "gui/models/planner_plan_set.h"

#include <algorithm>

#include "gui/models/palette.h"

namespace pipescope::gui {

namespace {

// Where the search's first offload trial (no offload) put the candidate; none when the
// search did not take offload for it.
std::optional<PlanPoint> point_without_offload(const Candidate& c) {
  if (!c.offload_chosen || c.offload_trials.empty() || c.offload_trials.front().step_ns <= 0) return std::nullopt;
  const Candidate::OffloadTrial& none = c.offload_trials.front();
  PlanPoint p;
  p.step_ns = none.step_ns;
  for (int64_t b : none.stage_peak_bytes) p.peak_bytes = std::max(p.peak_bytes, b);
  return p;
}

QString candidate_tooltip(const Candidate& c) {
  const double gib = static_cast<double>(c.peak_bytes) / gib_unit().bytes;
  QString text = QString("%1\nstep %2 ms, %3 samples/s, bubble %4 %\npeak %5 GiB per device%6%7")
                     .arg(QString::fromStdString(c.label()))
                     .arg(static_cast<double>(c.step_ns) / 1e6, 0, 'f', 3)
                     .arg(c.throughput_samples_per_s, 0, 'f', 1)
                     .arg(100 * c.bubble_fraction, 0, 'f', 1)
                     .arg(gib, 0, 'f', 2)
                     .arg(c.fits ? "" : " (does not fit)")
                     .arg(c.pareto ? "\non the Pareto front" : "");
  if (c.plan.offload.active()) {
    text += QString("\nactivation offload: %1%2")
                .arg(QString::fromStdString(to_string(c.plan.offload.policy)))
                .arg(c.offload_chosen ? " (it does not fit without)" : "");
  }
  return text;
}

}  // namespace

PlanSet plan_set_of(const SearchResult& result) {
  PlanSet s{"Every candidate plan", "device", "Plan", gib_unit(), result.memory_limit_bytes, {},
            {"Samples/s", "Bubble", "Fits", "Pareto", "Rank"}, {}};
  for (const Candidate& c : result.candidates) {
    PlanRow r;
    r.label = QString::fromStdString(c.label());
    r.point = {c.peak_bytes, c.step_ns};
    r.fits = c.fits;
    r.pareto = c.pareto;
    r.offload = c.plan.offload.active();
    r.without_offload = point_without_offload(c);
    r.values = {static_cast<int>(c.schedule), c.stages,    c.replicas, c.microbatches,
                c.chunks,                     has_r_ops(c.recompute), static_cast<int>(c.plan.offload.policy)};
    r.cells = {QString::number(c.throughput_samples_per_s, 'f', 1), QString::number(100 * c.bubble_fraction, 'f', 1) + " %",
               c.fits ? "yes" : "no", c.pareto ? "\u2605" : "", c.rank > 0 ? QString::number(c.rank) : "-"};
    r.tooltip = candidate_tooltip(c);
    s.rows.push_back(std::move(r));
  }
  s.add_dimension("schedule", [](int v) { return QString::fromStdString(to_string(static_cast<ScheduleKind>(v))); },
                  [](int v) { return schedule_color(static_cast<ScheduleKind>(v)); });
  s.add_dimension("K");
  s.add_dimension("r");
  s.add_dimension("M");
  s.add_dimension("v");
  s.add_dimension("recompute", [](int v) { return QString(v ? "on" : "off"); });
  s.add_dimension("offload", [](int v) { return QString::fromStdString(to_string(static_cast<OffloadPolicy>(v))); });
  return s;
}

}  // namespace pipescope::gui
