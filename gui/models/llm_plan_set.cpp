// gui/models/llm_plan_set.h: one row per layout of best, in order; the description.
#include "gui/models/llm_plan_set.h"

#include <cmath>

namespace pipescope::gui {

PlanSet plan_set_of(const LlmSearchResult& result) {
  PlanSet s{"llm-plan's layouts", "GPU", "Layout", llm_plan_gb_unit(), static_cast<int64_t>(std::llround(result.capacity)),
            {}, {"Schedule", "Bubble", "MFU"}, {}};
  for (const LlmCandidate& c : result.best) {
    const ParallelLayout& l = c.layout;
    PlanRow r;
    r.label = QString::fromStdString(layout_summary(l));
    r.point = {static_cast<int64_t>(std::llround(c.peak_bytes)), c.step_ns};
    r.values = {l.t, l.d, l.cp, l.ep, static_cast<int>(l.sharding)};
    r.cells = {QString::fromStdString(c.schedule), QString::number(c.bubble, 'f', 3),
               QString::number(100 * c.mfu, 'f', 1) + " %"};
    r.tooltip = QString("%1\n%2, step %3 ms, peak %4 GB per GPU, bubble %5, MFU %6 %")
                    .arg(r.label, r.cells[0])
                    .arg(static_cast<double>(c.step_ns) / 1e6, 0, 'f', 3)
                    .arg(c.peak_bytes / s.unit.bytes, 0, 'f', 2)
                    .arg(c.bubble, 0, 'f', 3)
                    .arg(100 * c.mfu, 0, 'f', 1);
    s.rows.push_back(std::move(r));
  }
  for (const char* name : {"t", "d", "cp", "ep"}) s.add_dimension(name);
  s.add_dimension("sharding", [](int v) { return QString::fromStdString(to_string(static_cast<Sharding>(v))); });
  return s;
}

QString llm_plan_description(const LlmPlanFile& f) {
  const LlmSearchResult& r = f.result;
  QString text = QString("%1 on %2 x %3 (%4 GB each), global batch %5, %6: the %7 fastest layouts that fit\n")
                     .arg(QString::fromStdString(f.model)).arg(f.gpus).arg(QString::fromStdString(f.gpu))
                     .arg(r.capacity / 1e9, 0, 'f', 1).arg(f.global_batch)
                     .arg(QString::fromStdString(to_string(f.framework))).arg(r.best.size());
  text += QString("searched: %1 (t, cp, d, p) factorizations, %2 layouts, %3 valid, %4 fit in memory, %5 simulated\n")
              .arg(r.factorizations).arg(r.enumerated).arg(r.valid).arg(r.fitting).arg(r.simulated);
  text += "why:";
  for (const std::string& w : r.why) text += "\n  " + QString::fromStdString(w);
  return text;
}

}  // namespace pipescope::gui
