// Offscreen widget tests of the plan-choosing tabs: the schedule box lists core's schedules; the
// plans tab's points load the candidate clicked; A/B pins, shows the differences,
// aligns both timelines and exports them as one picture; what-if edits re-simulate
// (debounced, off the GUI thread); timelines and memory stay readable at K = 64,
// M = 1024; `--screenshot --tab NAME` writes a picture for every tab.
#include <QComboBox>
#include <QFile>
#include <QItemSelectionModel>
#include <QImage>
#include <QProcess>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "gui/app/ab_view.h"
#include "gui/app/app_options.h"
#include "gui/app/controls_panel.h"
#include "gui/app/export.h"
#include "gui/app/main_window.h"
#include "gui/app/memory_view.h"
#include "gui/app/plans_view.h"
#include "gui/app/timeline_view.h"
#include "gui/models/memory_curves.h"
#include "gui/models/palette.h"
#include "gui/models/schedule_names.h"
#include "gui/models/timeline_model.h"
#include "gui/tests/uniform_plan.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using namespace pipescope::gui;

namespace {
AppOptions default_options() { return parse_app_options({"pipescope-gui"}); }
}  // namespace

class PlansWidgetsTest : public QObject {
  Q_OBJECT
 private slots:
  void schedule_box_lists_the_core_schedules();
  void clicking_a_point_loads_that_candidate();
  void ab_pins_compares_and_exports();
  void what_if_resimulates_after_a_pause();
  void timeline_at_scale_is_dense_and_labelled();
  void memory_overlays_many_stages();
  void screenshot_tabs_data();
  void screenshot_tabs();
};

void PlansWidgetsTest::schedule_box_lists_the_core_schedules() {
  ControlsPanel c;
  QStringList names;
  for (int i = 0; i < c.schedule_box()->count(); ++i) {
    const QString name = c.schedule_box()->itemData(i).toString();
    names << name;
    // The asynchronous ones (pipedream, 2bw) carry a visible mark and a tooltip saying why.
    const bool async = is_asynchronous(parse_schedule_kind(name.toStdString()));
    QCOMPARE(c.schedule_box()->itemText(i), async ? name + " (asynchronous)" : name);
    QCOMPARE(c.schedule_box()->itemData(i, Qt::ToolTipRole).toString().contains("stale weights"), async);
  }
  QCOMPARE(names, schedule_names());
  QVERIFY(names.contains("pipedream") && names.contains("2bw"));
}

void PlansWidgetsTest::clicking_a_point_loads_that_candidate() {
  MainWindow w(default_options());
  w.resize(1400, 900);
  w.show();
  w.show_tab("plans");
  w.wait_for_plan();
  w.run_plans();
  w.wait_for_plans();
  QCoreApplication::processEvents();
  const PlansModel& m = w.plans();
  const SearchResult* r = w.plans_result();
  QVERIFY(r);
  QCOMPARE(m.rowCount(), static_cast<int>(r->candidates.size()));
  // Click where the winner is drawn; whichever point is nearest there must load exactly.
  const int winner = r->ranking.front();
  PlansScatter* scatter = w.plans_view()->scatter();
  const QPoint at = scatter->point_of(winner).toPoint();
  const int row = scatter->row_at(at);
  QVERIFY(row >= 0);
  const Candidate& c = r->candidates[static_cast<std::size_t>(m.entry(row))];
  QTest::mouseClick(scatter, Qt::LeftButton, {}, at);
  QCOMPARE(scatter->current(), c.index);  // ringed, and its table row selected
  QCOMPARE(w.plans_view()->table()->selectionModel()->currentIndex().row(), row);
  w.wait_for_plan();
  QVERIFY(w.evaluation());
  QCOMPARE(w.evaluation()->report.step_ns, c.step_ns);
  QCOMPARE(w.evaluation()->report.peak_memory_bytes(), c.peak_bytes);
  QCOMPARE(w.controls()->stages_box()->value(), c.stages);
  QCOMPARE(w.controls()->microbatches_box()->value(), c.microbatches);
  QCOMPARE(w.controls()->schedule_box()->currentText(), QString::fromStdString(to_string(c.schedule)));
  // A row of the table loads its candidate too.
  QTableView* table = w.plans_view()->table();
  const int other = (row + 1) % m.rowCount();
  table->scrollTo(m.index(other, 0));
  QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(m.index(other, 0)).center());
  w.wait_for_plan();
  QCOMPARE(w.evaluation()->report.step_ns, r->candidates[static_cast<std::size_t>(m.entry(other))].step_ns);
  // The schedule filter leaves only that schedule's points.
  QComboBox* f = w.plans_view()->filter("schedule");
  QVERIFY(f);
  f->setCurrentIndex(f->findData(static_cast<int>(ScheduleKind::ZeroBubbleH1)));
  QVERIFY(m.rowCount() > 0);
  for (int i = 0; i < m.rowCount(); ++i) QCOMPARE(r->candidates[static_cast<std::size_t>(m.entry(i))].schedule, ScheduleKind::ZeroBubbleH1);
  // One box per dimension the candidates have, none for llm-plan's t or sharding.
  for (const char* d : {"K", "r", "M", "v", "recompute", "offload"}) QVERIFY2(w.plans_view()->filter(d), d);
  QVERIFY(!w.plans_view()->filter("t") && !w.plans_view()->filter("sharding"));
}

void PlansWidgetsTest::ab_pins_compares_and_exports() {
  MainWindow w(default_options());
  w.resize(1400, 900);
  w.show();
  w.show_tab("ab");
  w.wait_for_plan();
  const int64_t a_step = w.evaluation()->report.step_ns;
  w.pin_current();
  w.controls()->microbatches_box()->setValue(16);
  w.wait_for_plan();
  QCoreApplication::processEvents();
  const int64_t b_step = w.evaluation()->report.step_ns;
  QVERIFY(w.pinned());
  QCOMPARE(w.pinned()->report.step_ns, a_step);
  const AbModel& ab = w.ab();
  QCOMPARE(ab.rowCount(), 3 + 4);
  QCOMPARE(ab.data(ab.index(AbModel::StepTime, AbModel::Delta), AbModel::RawRole).toDouble(),
           static_cast<double>(b_step - a_step));
  // Aligned: one time scale over the longer step, so equal times sit at equal x.
  AbView* v = w.ab_view();
  QCOMPARE(v->view_a()->axis().ns_per_px, v->view_b()->axis().ns_per_px);
  QCOMPARE(v->view_a()->plot_rect().left(), v->view_b()->plot_rect().left());
  QCOMPARE(v->view_a()->axis().view_start_ns, 0.0);
  QVERIFY(std::fabs(v->view_b()->axis().view_end_ns() - static_cast<double>(std::max(a_step, b_step))) < 1e-6 * b_step);
  QTemporaryDir dir;
  save_image(v->content(), dir.filePath("ab.png"), "a-b");
  save_image(v->content(), dir.filePath("ab.svg"), "a-b");
  const QImage png(dir.filePath("ab.png"));
  QCOMPARE(png.size(), v->content()->size());
  QFile svg(dir.filePath("ab.svg"));
  QVERIFY(svg.open(QIODevice::ReadOnly));
  const QByteArray text = svg.readAll();
  QVERIFY(text.contains("<svg"));
  QVERIFY(text.contains("B - A"));  // the delta table is in the same picture
}

void PlansWidgetsTest::what_if_resimulates_after_a_pause() {
  MainWindow w(default_options());
  w.wait_for_plan();
  const int64_t before = w.evaluation()->report.step_ns;
  QSignalSpy ready(&w.plan_worker(), &PlanWorker::ready);
  WhatIf slow;
  slow.bandwidth_gb_per_s = 1;  // 1 GB/s links instead of 450
  w.controls()->set_what_if(slow);
  QCOMPARE(ready.count(), 0);  // nothing simulated yet: the edit waits for a pause
  QVERIFY(ready.wait(10000));
  QVERIFY(w.evaluation()->report.step_ns > before);
  QCOMPARE(w.evaluation()->report.step_ns, evaluate(w.current_inputs()).report.step_ns);
}

void PlansWidgetsTest::timeline_at_scale_is_dense_and_labelled() {
  const StepReport r = evaluate(uniform_inputs(64, 64, 1024)).report;
  TimelineModel m;
  m.set_timeline(r.timeline, r.step_ns);
  TimelineView v;
  v.set_model(&m);
  v.resize(1400, 520);
  v.fit();
  // 2048 ops over ~1270 px: far under 3 px each, so density; every row has room for its label.
  QVERIFY(v.density_mode());
  const int fh = v.fontMetrics().height();
  QVERIFY(static_cast<int>(v.rows().size()) * fh <= v.plot_rect().height());
  QCOMPARE(v.rows().back().label, QString("links (126)"));
  // Hovering a row in density mode names the row and its busy share.
  const QPoint in_row0(v.plot_rect().center().x(), v.plot_rect().top() + 3);
  QVERIFY2(v.tooltip_at(in_row0).startsWith("devices 0-2\nbusy "), qPrintable(v.tooltip_at(in_row0)));
  // Clicking the links label expands them: link rows (grouped to fit) replace the one row.
  const int links_y = v.plot_rect().top() + (static_cast<int>(v.rows().size()) - 1) * (v.plot_rect().height() / static_cast<int>(v.rows().size())) + 4;
  QTest::mouseClick(&v, Qt::LeftButton, {}, QPoint(10, links_y));
  QCOMPARE(v.link_rows(), LinkRows::Expanded);
  QVERIFY(v.rows().back().label.startsWith("links ") && !v.rows().back().label.contains("("));
  QVERIFY(static_cast<int>(v.rows().size()) * fh <= v.plot_rect().height());
  TimeAxis zoomed = v.axis();
  zoomed.zoom(200, v.plot_rect().center().x());
  v.set_axis(zoomed);
  QVERIFY(!v.density_mode());
  // K = 16: 16 device rows, each labelled with its own device.
  const StepReport r16 = evaluate(uniform_inputs(64, 16, 512)).report;
  TimelineModel m16;
  m16.set_timeline(r16.timeline, r16.step_ns);
  TimelineView v16;
  v16.set_model(&m16);
  v16.resize(1400, 520);
  for (int d = 0; d < 16; ++d) QCOMPARE(v16.rows()[d].label, QString("device %1").arg(d));
}

void PlansWidgetsTest::memory_overlays_many_stages() {
  MemoryView v;
  v.resize(1400, 360);
  v.set_curves(memory_curves(evaluate(uniform_inputs(64, 8, 32)).report));
  QVERIFY(!v.overlaid());
  v.set_curves(memory_curves(evaluate(uniform_inputs(64, 64, 128)).report));
  QVERIFY(v.overlaid());
  // One chart for all: every stage's area is the same rectangle, wider than half the view.
  QCOMPARE(v.stage_rect(0), v.stage_rect(63));
  QVERIFY(v.stage_rect(0).width() > 700);
}

void PlansWidgetsTest::screenshot_tabs_data() {
  QTest::addColumn<QString>("tab");
  for (const char* tab : {"timeline", "layers", "sweep", "compare", "plans", "ab"}) QTest::newRow(tab) << tab;
}

void PlansWidgetsTest::screenshot_tabs() {
  QFETCH(QString, tab);
  QTemporaryDir dir;
  QStringList args = {"--tab", tab, "--screenshot", dir.filePath(tab + ".png")};
  if (tab == "ab") {
    // A: K=8, M=16 saved as a plan file; B: the default K=4, M=8.
    AppOptions o = default_options();
    o.stages = 8;
    o.microbatches = 16;
    MainWindow w(o);
    w.wait_for_plan();
    w.save_plan(dir.filePath("a.json"));
    args << "--pin" << dir.filePath("a.json");
  }
  QProcess p;
  p.start(PIPESCOPE_GUI_EXE, args);
  QVERIFY(p.waitForFinished(300000));
  QCOMPARE(p.exitCode(), 0);
  const QImage shot(dir.filePath(tab + ".png"));
  QCOMPARE(shot.size(), QSize(1400, 900));
  // Not blank: plans shows points in each schedule's colour, A/B two timelines' forward boxes.
  auto count = [&](const QColor& c) {
    int n = 0;
    for (int y = 0; y < shot.height(); ++y) {
      for (int x = 0; x < shot.width(); ++x) n += shot.pixelColor(x, y) == c ? 1 : 0;
    }
    return n;
  };
  if (tab == "plans") {
    for (int k = 0; k < 4; ++k) QVERIFY2(count(stage_color(k)) > 20, qPrintable(schedule_names()[k]));
  }
  if (tab == "ab") QVERIFY(count(category_color("forward")) > 2000);
}

QTEST_MAIN(PlansWidgetsTest)
#include "plans_widgets_test.moc"
