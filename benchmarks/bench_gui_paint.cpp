// Paint time of pipescope-gui's timeline and memory views, offscreen, at scale
// (the goal: under 100 ms per full redraw at K = 64, M = 1024). The plan is
// max(K, 64) uniform blocks on K devices, 1F1B (gui/tests/uniform_plan.h). It checks first
// that the timeline holds all 2 K M device ops, that the view is in density mode with
// a label on every row and paints busy pixels, then times full redraws into an image
// and prints the median and the spread.
//   build/bin/bench_gui_paint [K M runs]      (defaults 64 1024 15)
#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "gui/app/memory_view.h"
#include "gui/app/timeline_view.h"
#include "gui/models/memory_curves.h"
#include "gui/models/palette.h"
#include "gui/models/timeline_model.h"
#include "gui/tests/uniform_plan.h"

using namespace pipescope;
using namespace pipescope::gui;

namespace {

struct Timing {
  double median_ms, min_ms, max_ms;
};

Timing time_renders(QWidget& w, int runs) {
  QImage image(w.size(), QImage::Format_ARGB32_Premultiplied);
  for (int i = 0; i < 2; ++i) w.render(&image);  // warm-up: fonts, caches
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    QElapsedTimer t;
    t.start();
    w.render(&image);
    ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), ms.back()};
}

int fail(const char* what) {
  std::fprintf(stderr, "bench_gui_paint: check failed: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const int K = argc > 1 ? std::atoi(argv[1]) : 64;
  const int M = argc > 2 ? std::atoi(argv[2]) : 1024;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 15;
  QElapsedTimer sim_timer;
  sim_timer.start();
  const Evaluation e = evaluate(uniform_inputs(std::max(K, 64), K, M));
  const double sim_ms = static_cast<double>(sim_timer.nsecsElapsed()) / 1e6;
  const StepReport& r = e.report;

  TimelineModel model;
  model.set_timeline(r.timeline, r.step_ns);
  int64_t position_ops = 0;
  for (int t = 0; t < model.track_count(); ++t) {
    if (model.track_name(t).startsWith("device ")) position_ops += static_cast<int64_t>(model.track_events(t).size());
  }
  if (position_ops != 2LL * K * M) return fail("the timeline holds 2 K M device ops (F and B)");

  TimelineView view;
  view.set_model(&model);
  view.resize(1400, 520);
  view.fit();
  if (!view.density_mode()) return fail("ops narrower than 3 px: density mode");
  const int fh = view.fontMetrics().height();
  if (static_cast<int>(view.rows().size()) * fh > view.plot_rect().height()) return fail("a label on every row");
  QImage shot(view.size(), QImage::Format_ARGB32_Premultiplied);
  view.render(&shot);
  int idle = 0;
  for (int x = view.plot_rect().left(); x < view.plot_rect().right(); ++x) {
    idle += shot.pixelColor(x, view.plot_rect().top() + 4) == category_color("idle") ? 1 : 0;
  }
  if (idle == view.plot_rect().width()) return fail("device 0's row shows busy columns");

  const Timing density = time_renders(view, runs);
  TimeAxis zoomed = view.axis();
  zoomed.zoom(200, view.plot_rect().center().x());  // ops about 8 px wide: boxes again
  view.set_axis(zoomed);
  if (view.density_mode()) return fail("zoomed in: ops mode");
  const Timing ops = time_renders(view, runs);

  MemoryView memory;
  memory.set_curves(memory_curves(r));
  memory.resize(1400, 360);
  if (memory.overlaid() != (K > MemoryView::kMaxSmallMultiples)) return fail("past 16 stages: one overlaid memory chart");
  const Timing mem = time_renders(memory, runs);

  std::printf("K=%d M=%d: %zu timeline events, %zu rows drawn, simulated in %.0f ms\n", K, M, model.events().size(),
              view.rows().size(), sim_ms);
  std::printf("timeline 1400x520, whole step (density): median %.1f ms (min %.1f, max %.1f) over %d redraws\n",
              density.median_ms, density.min_ms, density.max_ms, runs);
  std::printf("timeline 1400x520, zoomed 200x (ops):    median %.1f ms (min %.1f, max %.1f)\n", ops.median_ms,
              ops.min_ms, ops.max_ms);
  std::printf("memory 1400x360, %d stages %s: median %.1f ms (min %.1f, max %.1f)\n", K,
              memory.overlaid() ? "overlaid" : "as small multiples", mem.median_ms, mem.min_ms, mem.max_ms);
  return 0;
}
