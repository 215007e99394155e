// Offscreen widget tests (QT_QPA_PLATFORM=offscreen): the main window shows the
// simulator's numbers for the plan its controls describe, paints non-fitting stages
// red, marks the same best sweep cell as a brute-force search, exports PNG/SVG, and
// `pipescope-gui --screenshot` draws a non-blank timeline.
#include <QComboBox>
#include <QImage>
#include <QMimeData>
#include <QWheelEvent>
#include <QProcess>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "core/atomic_file.h"
#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/schedule.h"
#include "sim/simulator.h"
#include "core/report.h"
#include "gui/app/app_options.h"
#include "gui/app/controls_panel.h"
#include "gui/app/export.h"
#include "gui/app/main_window.h"
#include "gui/app/memory_view.h"
#include "gui/app/sweep_view.h"
#include "gui/app/timeline_view.h"
#include "gui/models/palette.h"
#include "gui/tests/brute_force_sweep.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using namespace pipescope::gui;

Q_DECLARE_METATYPE(pipescope::gui::SweepResult)

namespace {

AppOptions default_options() { return parse_app_options({"pipescope-gui"}); }

// Pixels of `image` inside `area` whose colour is within `tolerance` of `c`.
int count_color(const QImage& image, const QRect& area, const QColor& c, int tolerance = 12) {
  int n = 0;
  const QRect r = area.intersected(image.rect());
  for (int y = r.top(); y <= r.bottom(); ++y) {
    for (int x = r.left(); x <= r.right(); ++x) {
      const QColor p = image.pixelColor(x, y);
      if (std::abs(p.red() - c.red()) <= tolerance && std::abs(p.green() - c.green()) <= tolerance &&
          std::abs(p.blue() - c.blue()) <= tolerance) {
        ++n;
      }
    }
  }
  return n;
}

}  // namespace

class WidgetsTest : public QObject {
  Q_OBJECT
 private slots:
  void default_plan_loads();
  void changing_m_updates_the_summary();
  void non_fitting_stage_turns_red();
  void sweep_marks_the_brute_force_best_cell();
  void clicking_a_sweep_cell_loads_that_plan();
  void planner_grid_sweep_marks_the_cell_pipescope_plan_picks();
  void hover_describes_the_op();
  void compare_shows_errors();
  void dropping_a_profile_loads_it();
  void export_png_and_svg();
  void exported_plan_simulates_the_same();
  void wheel_zooms_and_drag_pans();
  void screenshot_timeline_is_not_blank();
  void bad_flag_exits_2_data();
  void bad_flag_exits_2();
};

void WidgetsTest::default_plan_loads() {
  MainWindow w(default_options());
  w.wait_for_plan();
  QVERIFY(w.evaluation());
  // Defaults: the bundled GPT-1.3B profile on 8x H200, K=4, M=8, 1F1B.
  QCOMPARE(w.evaluation()->report.num_positions, 4);
  QCOMPARE(w.evaluation()->report.microbatches, 8);
  QCOMPARE(QString::fromStdString(w.evaluation()->report.schedule), QString("1f1b"));
  QCOMPARE(w.evaluation()->report.memory_limit_bytes, 141000000000LL);
}

void WidgetsTest::changing_m_updates_the_summary() {
  MainWindow w(default_options());
  w.wait_for_plan();
  const qlonglong step_m8 = w.summary().data(w.summary().index(SummaryModel::StepTime, 1), SummaryModel::RawRole).toLongLong();
  w.controls()->microbatches_box()->setValue(16);
  w.wait_for_plan();
  // The simulator's numbers for K=4, M=16, computed here without the window.
  PlanInputs in = w.current_inputs();
  QCOMPARE(in.choice.microbatches, 16);
  const StepReport expected = evaluate(in).report;
  const SummaryModel& s = w.summary();
  QCOMPARE(s.data(s.index(SummaryModel::StepTime, 1), SummaryModel::RawRole).toLongLong(), expected.step_ns);
  QCOMPARE(s.data(s.index(SummaryModel::StepTime, 1)).toString(), QString::fromStdString(format_ms(expected.step_ns)) + " ms");
  QCOMPARE(s.data(s.index(SummaryModel::Throughput, 1), SummaryModel::RawRole).toDouble(), expected.throughput_samples_per_s);
  QCOMPARE(s.data(s.index(SummaryModel::Bubble, 1), SummaryModel::RawRole).toDouble(), expected.bubble_fraction);
  for (int d = 0; d < 4; ++d) {
    QCOMPARE(s.data(s.index(SummaryModel::FirstStage + d, 1), SummaryModel::RawRole).toLongLong(),
             expected.positions[d].peak_memory_bytes);
  }
  // Twice the micro-batches: a longer step than M=8 (more work, same bubble length).
  QVERIFY(expected.step_ns > step_m8);
}

void WidgetsTest::non_fitting_stage_turns_red() {
  MainWindow w(default_options());
  w.wait_for_plan();
  // On 8.6 GiB devices no cut of K=4, M=8 fits, so the optimal partitioner falls back to
  // the cut that needs the least memory (planner/partitioner.h, as `pipescope simulate
  // --hardware` and `plan` do): peaks 7.27, 8.56, 8.86 and 8.54 GiB; stage 2 does not
  // fit, the others do.
  Hardware small = *w.current_inputs().hardware;
  small.memory_bytes = (86LL << 30) / 10;
  w.set_hardware(std::make_shared<const Hardware>(small), "8.6 GiB test hardware");
  w.wait_for_plan();
  const StepReport& r = w.evaluation()->report;
  const bool expected_fits[] = {true, true, false, true};
  for (int d = 0; d < 4; ++d) QCOMPARE(r.positions[d].fits, expected_fits[d]);
  const SummaryModel& s = w.summary();
  w.resize(1400, 900);
  w.show();
  QCoreApplication::processEvents();
  const QImage memory = w.memory_view()->grab().toImage();
  for (int d = 0; d < 4; ++d) {
    const QModelIndex i = s.index(SummaryModel::FirstStage + d, 1);
    QCOMPARE(s.data(i, SummaryModel::FitsRole).toBool(), expected_fits[d]);
    QCOMPARE(s.data(i, Qt::ForegroundRole).value<QColor>() == does_not_fit_color(), !expected_fits[d]);
    QCOMPARE(w.memory_view()->stage_fill(d) == does_not_fit_color(), !expected_fits[d]);
    // Red pixels (fill and frame) inside the stage's chart only when it does not fit.
    const int red = count_color(memory, w.memory_view()->stage_rect(d).adjusted(-2, -2, 2, 2), does_not_fit_color(), 30);
    QVERIFY2(expected_fits[d] ? red == 0 : red > 100, qPrintable(QString("stage %1: %2 red pixels").arg(d).arg(red)));
  }
  QVERIFY(w.status_text().contains("do not fit"));
}

void WidgetsTest::sweep_marks_the_brute_force_best_cell() {
  qRegisterMetaType<SweepResult>();
  // GPipe on 40 GB devices: large M does not fit, so the best cell is not a corner.
  MainWindow w(default_options());
  w.controls()->schedule_box()->setCurrentText("gpipe");
  Hardware small = *w.current_inputs().hardware;
  small.memory_bytes = 40000000000;
  w.set_hardware(std::make_shared<const Hardware>(small), "40 GB test hardware");
  w.wait_for_plan();
  QSignalSpy finished(&w.sweep_worker(), &SweepWorker::finished);
  w.run_sweep();
  QVERIFY(finished.wait(120000));
  const SweepModel& m = w.sweep();
  const QModelIndex best = m.best_index();
  QVERIFY(best.isValid());
  // Brute force over the same cells with the library calls directly.
  const BruteForce bf = brute_force(w.current_inputs(), m.result().axes);
  const int brute_best = bf.best;
  const double best_tp = bf.throughput[bf.best];
  QCOMPARE(best.row() * m.columnCount() + best.column(), brute_best);
  QCOMPARE(m.data(best, SweepModel::ThroughputRole).toDouble(), best_tp);
  // The heat map paints the best cell's orange frame.
  w.resize(1400, 900);
  w.show_tab("sweep");
  w.show();
  QCoreApplication::processEvents();
  const QImage map = w.sweep_view()->heat_map()->grab().toImage();
  QVERIFY(count_color(map, w.sweep_view()->heat_map()->cell_rect(best.row(), best.column()), QColor(255, 170, 0), 20) > 50);
  // K=1 with M=128 keeps 128 micro-batches of a 26-layer model: crossed out in red.
  const QModelIndex corner = m.index(0, m.columnCount() - 1);
  QCOMPARE(m.data(corner, SweepModel::FitsRole).toBool(), false);
  QVERIFY(count_color(map, w.sweep_view()->heat_map()->cell_rect(0, m.columnCount() - 1), does_not_fit_color(), 20) > 50);
  QVERIFY(count_color(map, w.sweep_view()->heat_map()->cell_rect(best.row(), best.column()), does_not_fit_color(), 20) == 0);
}

void WidgetsTest::clicking_a_sweep_cell_loads_that_plan() {
  MainWindow w(default_options());
  w.wait_for_plan();
  QSignalSpy finished(&w.sweep_worker(), &SweepWorker::finished);
  w.run_sweep();
  QVERIFY(finished.wait(120000));
  w.resize(1400, 900);
  w.show_tab("sweep");
  w.show();
  QCoreApplication::processEvents();
  // Row 1 is K=2, column 3 is M=8.
  SweepHeatMap* map = w.sweep_view()->heat_map();
  QTest::mouseClick(map, Qt::LeftButton, {}, map->cell_rect(1, 3).center());
  w.wait_for_plan();
  QCOMPARE(w.evaluation()->report.num_positions, 2);
  QCOMPARE(w.evaluation()->report.microbatches, 8);
}

void WidgetsTest::planner_grid_sweep_marks_the_cell_pipescope_plan_picks() {
  // 1F1B on 8 devices of 16 GB with a mini-batch of 32 (M=8 x micro-batch 4): pure data
  // parallelism (K=1, r=8) needs 21.65 GiB or more per device, so the winner is a
  // pipelined plan (K=4 r=2 M=16 at the time of writing; the test asks the CLI).
  QTemporaryDir dir;
  const QString hw_path = dir.filePath("h200-16gb.json");
  Hardware small = load_hardware(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/h200-8x-nvlink.json");
  small.memory_bytes = 16000000000;
  write_file_atomically(hw_path.toStdString(), hardware_to_json(small).dump());
  QProcess cli;
  cli.start(PIPESCOPE_BINARY, {"plan", "--profile", QString(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-1.3b-h200.json", "--hardware",
                                hw_path, "-D", "8", "-N", "32", "--schedules", "1f1b", "--recompute", "off", "--json"});
  QVERIFY(cli.waitForFinished(120000));
  QCOMPARE(cli.exitCode(), 0);
  const Json top = Json::parse(cli.readAllStandardOutput().toStdString())["top"][0];
  const int cli_k = top["stages"].get<int>(), cli_m = top["microbatches"].get<int>();
  qInfo("pipescope plan picks %s, %.1f samples/s", top["label"].get<std::string>().c_str(),
        top["throughput_samples_per_s"].get<double>());

  AppOptions o = default_options();
  o.schedule = "1f1b";
  o.microbatches = 8;
  o.microbatch_size = 4;
  o.hardware_path = hw_path;
  MainWindow w(o);
  w.wait_for_plan();
  w.sweep_view()->set_planner_grid(true);
  QSignalSpy finished(&w.sweep_worker(), &SweepWorker::finished);
  w.run_sweep();
  QVERIFY(finished.wait(120000));
  const SweepModel& m = w.sweep();
  QCOMPARE(m.result().axes.batch, 32LL);
  QCOMPARE(m.result().axes.stages, (std::vector<int>{1, 2, 4, 8}));
  const QModelIndex best = m.best_index();
  QVERIFY(best.isValid());
  QCOMPARE(m.data(best, SweepModel::StagesRole).toInt(), cli_k);
  QCOMPARE(m.data(best, SweepModel::MicrobatchesRole).toInt(), cli_m);
  const double tp = m.data(best, SweepModel::ThroughputRole).toDouble();
  QVERIFY2(std::fabs(tp - top["throughput_samples_per_s"].get<double>()) < 1e-6 * tp, qPrintable(QString::number(tp)));
}

void WidgetsTest::hover_describes_the_op() {
  MainWindow w(default_options());
  w.resize(1400, 900);
  w.show();
  w.wait_for_plan();
  QCoreApplication::processEvents();
  TimelineView* v = w.timeline_view();
  // Device 0 starts with F(0,0) at t=0: a point just right of the plot's left edge in row 0.
  const QPoint p(v->plot_rect().left() + 3, v->plot_rect().top() + 10);
  const QString tip = v->tooltip_at(p);
  QVERIFY2(tip.startsWith("forward, stage 0, micro-batch 0"), qPrintable(tip));
  QVERIFY(tip.contains("start 0.000 ms"));
}

void WidgetsTest::compare_shows_errors() {
  QTemporaryDir dir;
  MainWindow w(default_options());
  w.wait_for_plan();
  StepReport measured = w.evaluation()->report;
  measured.kind = "measurement";
  measured.step_ns = measured.step_ns * 5 / 4;  // 25 % slower than predicted
  const QString path = dir.filePath("measurement.json");
  write_file_atomically(path.toStdString(), report_to_json(measured).dump(2));
  QVERIFY(w.open_any(path));
  const CompareModel& c = w.comparison();
  QVERIFY(c.rowCount() > 0);
  // (measured - predicted) / predicted = (1.25 - 1) / 1 = +25 %.
  QVERIFY(std::fabs(c.data(c.index(0, CompareModel::ErrorPercent), CompareModel::RawRole).toDouble() - 25.0) < 0.01);
  const QString trace = dir.filePath("trace.json");
  write_file_atomically(trace.toStdString(), chrome_trace(w.evaluation()->report));
  QVERIFY(w.open_any(trace));
  // With a trace the table gains the replayed step: the prediction's own trace replays
  // to the predicted step exactly (sim/replay.h), so that row's "predicted" column is
  // the predicted step time and its measured column the measurement's.
  QCOMPARE(c.data(c.index(1, CompareModel::Quantity), Qt::DisplayRole).toString(),
           QString("Step time, replayed with measured op times (ms)"));
  QCOMPARE(c.data(c.index(1, CompareModel::Predicted), CompareModel::RawRole).toDouble(),
           c.data(c.index(0, CompareModel::Predicted), CompareModel::RawRole).toDouble());
  // Rows side by side: 10 predicted tracks, each followed by its measured twin.
  const TimelineModel& rows = w.compare_rows();
  QCOMPARE(rows.track_count(), 20);
  QCOMPARE(rows.track_name(0), QString("device 0 pred"));
  QCOMPARE(rows.track_name(1), QString("device 0 meas"));
  QCOMPARE(rows.busy_ns(1), rows.busy_ns(0));  // the trace is the prediction's own
  QVERIFY(!w.open_any(dir.filePath("missing.json")));
  QVERIFY(w.status_text().contains("missing.json"));
}

void WidgetsTest::dropping_a_profile_loads_it() {
  MainWindow w(default_options());
  w.wait_for_plan();
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(QString(PIPESCOPE_SOURCE_DIR) + "/profiles/toy-uniform.json")});
  // A synthetic QDropEvent is not delivered without a drag in progress, so this calls
  // what dropEvent calls.
  w.open_dropped(mime);
  w.wait_for_plan();
  QVERIFY(w.evaluation());
  QCOMPARE(QString::fromStdString(w.evaluation()->report.model), QString("toy-uniform"));
  // toy-uniform: 16 layers of 1 ms forward + 2 ms backward at micro-batch 1, in 4 stages of 4 layers.
  QCOMPARE(w.evaluation()->plan.stages[0].end_layer, 4);
}

void WidgetsTest::export_png_and_svg() {
  QTemporaryDir dir;
  MainWindow w(default_options());
  w.resize(1400, 900);
  w.show();
  w.wait_for_plan();
  QCoreApplication::processEvents();
  const QString png = dir.filePath("timeline.png"), svg = dir.filePath("timeline.svg");
  save_image(w.timeline_view(), png, "timeline");
  save_image(w.timeline_view(), svg, "timeline");
  QImage image(png);
  QCOMPARE(image.size(), w.timeline_view()->size());
  QFile f(svg);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QByteArray text = f.readAll();
  QVERIFY(text.contains("<svg"));
  QVERIFY(text.contains("device 0"));  // track labels stay text in the SVG
}

void WidgetsTest::exported_plan_simulates_the_same() {
  QTemporaryDir dir;
  MainWindow w(default_options());
  w.wait_for_plan();
  const QString path = dir.filePath("plan.json");
  w.save_plan(path);
  // The saved plan, loaded and simulated the way `pipescope simulate --plan` does, gives the same step.
  const Plan plan = load_plan(path.toStdString());
  QCOMPARE(plan.stages.size(), std::size_t{4});
  QCOMPARE(plan.microbatches, 8);
  const PlanInputs in = w.current_inputs();
  Schedule s = schedule_for(plan);
  validate_schedule(s);
  const StepReport r = simulate(s, build_cost_model(*in.profile, plan, *in.hardware), *in.hardware);
  QCOMPARE(r.step_ns, w.evaluation()->report.step_ns);
}

void WidgetsTest::wheel_zooms_and_drag_pans() {
  MainWindow w(default_options());
  w.resize(1400, 900);
  w.show();
  w.wait_for_plan();
  QCoreApplication::processEvents();
  TimelineView* v = w.timeline_view();
  const TimeAxis before = v->axis();
  const QPointF at(v->plot_rect().center());
  const int64_t anchor = before.time_of(at.x());
  // One wheel notch (120) zooms in by 1.25 around the pointer.
  QWheelEvent wheel(at, v->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
  QCoreApplication::sendEvent(v, &wheel);
  QVERIFY(std::fabs(v->axis().ns_per_px - before.ns_per_px / 1.25) < 1e-9 * before.ns_per_px);
  QVERIFY(std::llabs(v->axis().time_of(at.x()) - anchor) <= 1);
  // Dragging 100 px to the left shows times 100 px later.
  const double start = v->axis().view_start_ns, per_px = v->axis().ns_per_px;
  const QPoint p0 = at.toPoint();
  QTest::mousePress(v, Qt::LeftButton, {}, p0);
  QMouseEvent move(QEvent::MouseMove, QPointF(p0 - QPoint(100, 0)), v->mapToGlobal(QPointF(p0 - QPoint(100, 0))),
                   Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(v, &move);
  QTest::mouseRelease(v, Qt::LeftButton, {}, p0 - QPoint(100, 0));
  QVERIFY(std::fabs(v->axis().view_start_ns - (start + 100 * per_px)) < 1e-6 * per_px);
  // A double click fits the whole step again.
  QTest::mouseDClick(v, Qt::LeftButton, {}, p0);
  QCOMPARE(v->axis().ns_per_px, before.ns_per_px);
  QCOMPARE(v->axis().view_start_ns, 0.0);
}

void WidgetsTest::screenshot_timeline_is_not_blank() {
  QTemporaryDir dir;
  const QString png = dir.filePath("gui.png");
  QProcess p;
  p.start(PIPESCOPE_GUI_EXE, {"--screenshot", png});
  QVERIFY(p.waitForFinished(120000));
  QCOMPARE(p.exitCode(), 0);
  const QImage shot(png);
  QCOMPARE(shot.size(), QSize(1400, 900));
  // Where the timeline is (same layout in this process), forward and backward boxes
  // cover a good part of the plot: K=4, M=8 1F1B keeps devices ~69 % busy.
  MainWindow w(default_options());
  w.show();
  w.wait_for_plan();
  QCoreApplication::processEvents();
  TimelineView* v = w.timeline_view();
  const QRect plot(v->mapTo(&w, v->plot_rect().topLeft()), v->plot_rect().size());
  const int forward = count_color(shot, plot, category_color("forward"), 6);
  const int backward = count_color(shot, plot, category_color("backward"), 6);
  const double area = static_cast<double>(plot.width()) * plot.height();
  qInfo("timeline plot %dx%d: %.1f %% forward, %.1f %% backward pixels", plot.width(), plot.height(),
        100 * forward / area, 100 * backward / area);
  QVERIFY(forward > 0.02 * area);
  QVERIFY(backward > 0.04 * area);
}

void WidgetsTest::bad_flag_exits_2_data() {
  QTest::addColumn<QStringList>("args");
  QTest::addColumn<QString>("message");
  QTest::newRow("K not a number") << QStringList{"--stages", "zero"} << "--stages: expected a whole number";
  QTest::newRow("M too large") << QStringList{"-M", "70000"} << "--microbatches: expected a whole number from 1 to 65536";
  QTest::newRow("unknown schedule") << QStringList{"--schedule", "foo"} << "unknown schedule \"foo\"";
  QTest::newRow("more stages than devices") << QStringList{"-K", "9"} << "needs 9 devices, but 8x H200 NVLink has 8";
  QTest::newRow("missing profile") << QStringList{"--profile", "/nonexistent.json"} << "/nonexistent.json";
}

void WidgetsTest::bad_flag_exits_2() {
  QFETCH(QStringList, args);
  QFETCH(QString, message);
  QTemporaryDir dir;
  QProcess p;
  p.start(PIPESCOPE_GUI_EXE, args + QStringList{"--screenshot", dir.filePath("never.png")});
  QVERIFY(p.waitForFinished(60000));
  const QString err = QString::fromUtf8(p.readAllStandardError());
  QCOMPARE(p.exitCode(), 2);
  QVERIFY2(err.contains(message), qPrintable(err));
  QVERIFY(!QFile::exists(dir.filePath("never.png")));
}

QTEST_MAIN(WidgetsTest)
#include "widgets_test.moc"
