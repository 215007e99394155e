// Tests of the GUI's data models without widgets: every model under
// QAbstractItemModelTester, the time-to-pixel mapping with data-driven cases, and the
// models' numbers against the library calls they wrap (the simulator's own report,
// an independent brute-force sweep, a Chrome-trace round trip).
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>
#include <cmath>

#include "core/compare.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "core/hardware.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "gui/models/compare_model.h"
#include "gui/models/layer_table_model.h"
#include "gui/models/memory_curves.h"
#include "gui/models/plan_evaluation.h"
#include "gui/models/summary_model.h"
#include "gui/models/sweep.h"
#include "gui/models/sweep_model.h"
#include "gui/models/time_axis.h"
#include "gui/models/timeline_merge.h"
#include "gui/models/timeline_model.h"
#include "gui/models/trace_reader.h"
#include "gui/models/workers.h"
#include "gui/tests/brute_force_sweep.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using namespace pipescope::gui;

Q_DECLARE_METATYPE(pipescope::gui::SweepResult)

namespace {

PlanInputs default_inputs() {
  PlanInputs in;
  in.profile = std::make_shared<const Profile>(load_profile(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-1.3b-h200.json"));
  in.hardware = std::make_shared<const Hardware>(load_hardware(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/h200-8x-nvlink.json"));
  in.choice.stages = 4;
  in.choice.microbatches = 8;
  return in;
}

}  // namespace

class ModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void time_axis_maps_both_ways_data();
  void time_axis_maps_both_ways();
  void time_axis_zoom_keeps_anchor_data();
  void time_axis_zoom_keeps_anchor();
  void time_axis_pan_and_clamp();
  void time_axis_ticks_data();
  void time_axis_ticks();
  void layer_table_model();
  void timeline_model();
  void summary_model();
  void memory_curves_peak_matches_report();
  void sweep_matches_brute_force();
  void sweep_cancel_stops_after_the_cell_in_flight();
  void sweep_model();
  void compare_model();
  void chrome_trace_round_trip();
  void run_trace_shows_the_reported_step();
  void interleaved_rows_pair_tracks_by_name();
  void plan_worker_reports_only_the_latest();
  void plan_worker_reports_failure();
  void sweep_worker_matches_compute_sweep();
};

void ModelsTest::time_axis_maps_both_ways_data() {
  QTest::addColumn<qlonglong>("end");
  QTest::addColumn<double>("left");
  QTest::addColumn<double>("width");
  QTest::addColumn<double>("x");
  QTest::addColumn<qlonglong>("time");
  // fit(0, end) over `width` px: ns_per_px = end / width, time = (x - left) * ns_per_px.
  QTest::newRow("left edge is t=0") << 1000000LL << 100.0 << 1000.0 << 100.0 << 0LL;
  QTest::newRow("middle") << 1000000LL << 100.0 << 1000.0 << 600.0 << 500000LL;
  QTest::newRow("right edge is the end") << 1000000LL << 100.0 << 1000.0 << 1100.0 << 1000000LL;
  QTest::newRow("left of the plot is negative time") << 1000000LL << 100.0 << 1000.0 << 50.0 << -50000LL;
  QTest::newRow("121 ms over 913 px") << 120995000LL << 110.0 << 913.0 << 566.5 << 60497500LL;
}

void ModelsTest::time_axis_maps_both_ways() {
  QFETCH(qlonglong, end);
  QFETCH(double, left);
  QFETCH(double, width);
  QFETCH(double, x);
  QFETCH(qlonglong, time);
  TimeAxis a;
  a.fit(0, end, left, width);
  QCOMPARE(a.time_of(x), time);
  QVERIFY(std::fabs(a.x_of(static_cast<double>(time)) - x) < 1e-6);
}

void ModelsTest::time_axis_zoom_keeps_anchor_data() {
  QTest::addColumn<double>("factor");
  QTest::addColumn<double>("anchor");
  QTest::addColumn<double>("ns_per_px");
  QTest::addColumn<double>("view_start");
  // Start: 1 ms over 1000 px from x=100 (1000 ns/px). Zoom f at x keeps time(x):
  // ns_per_px' = 1000 / f, view_start' = time(x) - (x - 100) * ns_per_px'.
  QTest::newRow("2x at the middle") << 2.0 << 600.0 << 500.0 << 250000.0;
  QTest::newRow("2x at the left edge") << 2.0 << 100.0 << 500.0 << 0.0;
  QTest::newRow("4x at the right edge") << 4.0 << 1100.0 << 250.0 << 750000.0;
  QTest::newRow("zoom out 2x at the middle") << 0.5 << 600.0 << 2000.0 << -500000.0;
}

void ModelsTest::time_axis_zoom_keeps_anchor() {
  QFETCH(double, factor);
  QFETCH(double, anchor);
  QFETCH(double, ns_per_px);
  QFETCH(double, view_start);
  TimeAxis a;
  a.fit(0, 1000000, 100, 1000);
  const int64_t before = a.time_of(anchor);
  a.zoom(factor, anchor);
  QCOMPARE(a.ns_per_px, ns_per_px);
  QCOMPARE(a.view_start_ns, view_start);
  QCOMPARE(a.time_of(anchor), before);
}

void ModelsTest::time_axis_pan_and_clamp() {
  TimeAxis a;
  a.fit(0, 1000000, 100, 1000);
  a.pan(50);  // 50 px at 1000 ns/px
  QCOMPARE(a.view_start_ns, 50000.0);
  QCOMPARE(a.view_end_ns(), 1050000.0);
  // 100 ns over 1000 px would be 0.1 ns/px: clamped to 1 ns/px, and zooming further stays there.
  a.fit(0, 100, 0, 1000);
  QCOMPARE(a.ns_per_px, TimeAxis::kMinNsPerPx);
  a.zoom(10, 500);
  QCOMPARE(a.ns_per_px, TimeAxis::kMinNsPerPx);
}

void ModelsTest::time_axis_ticks_data() {
  QTest::addColumn<double>("ns_per_px");
  QTest::addColumn<double>("step");
  // The smallest 1/2/5 x 10^k at least 90 px wide: 90 px x ns_per_px rounded up.
  QTest::newRow("90 us -> 100 us") << 1000.0 << 1e5;
  QTest::newRow("120 us -> 200 us") << 1333.0 << 2e5;
  QTest::newRow("450 us -> 500 us") << 5000.0 << 5e5;
  QTest::newRow("exactly 1 ms") << 1e6 / 90 << 1e6;
  QTest::newRow("12 ms -> 20 ms") << 132522.0 << 2e7;
}

void ModelsTest::time_axis_ticks() {
  QFETCH(double, ns_per_px);
  QFETCH(double, step);
  TimeAxis a;
  a.ns_per_px = ns_per_px;
  QVERIFY2(std::fabs(a.tick_step_ns(90) - step) < 1e-6 * step, qPrintable(QString::number(a.tick_step_ns(90))));
}

void ModelsTest::layer_table_model() {
  const PlanInputs in = default_inputs();
  const Evaluation e = evaluate(in);
  LayerTableModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.set_plan(in.profile, e.plan);
  QCOMPARE(m.rowCount(), in.profile->num_layers());
  QCOMPARE(m.columnCount(), static_cast<int>(LayerTableModel::ColumnCount));
  // Row values are the profile's interpolation at the plan's micro-batch size (1).
  for (int l = 0; l < m.rowCount(); ++l) {
    QCOMPARE(m.data(m.index(l, LayerTableModel::ForwardMs), LayerTableModel::RawRole).toDouble(),
             in.profile->forward_ms(l, 1.0));
    QCOMPARE(m.data(m.index(l, LayerTableModel::ActivationBytes), LayerTableModel::RawRole).toDouble(),
             static_cast<double>(in.profile->activation_bytes(l, 1.0)));
    const int stage = m.data(m.index(l, 0), LayerTableModel::StageRole).toInt();
    QVERIFY(l >= e.plan.stages[stage].first_layer && l < e.plan.stages[stage].end_layer);
  }
  m.set_plan(in.profile, Plan{});  // a plan with no stages: every layer has stage -1
  QCOMPARE(m.data(m.index(0, 0), LayerTableModel::StageRole).toInt(), -1);
}

void ModelsTest::timeline_model() {
  const Evaluation e = evaluate(default_inputs());
  TimelineModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.set_timeline(e.report.timeline, e.report.step_ns);
  QCOMPARE(m.rowCount(), static_cast<int>(e.report.timeline.events.size()));
  QCOMPARE(m.end_ns(), e.report.step_ns);
  // 4 devices then 6 link tracks (0->1, 1->2, 2->3 and back).
  QCOMPARE(m.track_count(), 10);
  // Busy time per device track equals the simulator's per-stage busy_ns.
  for (int d = 0; d < 4; ++d) QCOMPARE(m.busy_ns(d), e.report.positions[d].busy_ns);
  // Hover: the middle of device 0's first op finds it; device 0 starts with F(0,0) at t=0.
  const int first = m.track_events(0).front();
  const TimelineEvent& ev = m.events()[first];
  QCOMPARE(ev.start_ns, 0LL);
  QCOMPARE(m.event_at(0, ev.start_ns + ev.duration_ns / 2), first);
  QVERIFY(m.describe(first).startsWith("forward, stage 0, micro-batch 0"));
  // Device 3 is idle until the first activation arrives: no event at t=1 ns without tolerance.
  QCOMPARE(m.event_at(3, 1), -1);
  m.set_timeline({});
  QCOMPARE(m.rowCount(), 0);
}

void ModelsTest::summary_model() {
  const Evaluation e = evaluate(default_inputs());
  SummaryModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.set_report(e.report);
  QCOMPARE(m.rowCount(), 3 + 4);
  QCOMPARE(m.data(m.index(SummaryModel::StepTime, 1), SummaryModel::RawRole).toLongLong(), e.report.step_ns);
  QCOMPARE(m.data(m.index(SummaryModel::Throughput, 1), SummaryModel::RawRole).toDouble(), e.report.throughput_samples_per_s);
  QCOMPARE(m.data(m.index(SummaryModel::Bubble, 1), SummaryModel::RawRole).toDouble(), e.report.bubble_fraction);
  QCOMPARE(m.data(m.index(SummaryModel::FirstStage + 2, 1), SummaryModel::RawRole).toLongLong(),
           e.report.positions[2].peak_memory_bytes);
  m.clear();
  QCOMPARE(m.rowCount(), 0);
}

void ModelsTest::memory_curves_peak_matches_report() {
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZeroBubbleH1}) {
    PlanInputs in = default_inputs();
    in.choice.schedule = kind;
    const Evaluation e = evaluate(in);
    const MemoryCurves c = memory_curves(e.report);
    QCOMPARE(c.stages.size(), e.report.positions.size());
    for (const StageMemoryCurve& s : c.stages) {
      int64_t peak = 0;
      for (const MemoryStep& m : s.steps) peak = std::max(peak, s.static_bytes + m.above_static());
      QCOMPARE(peak, e.report.positions[s.stage].peak_memory_bytes);
      QCOMPARE(s.steps.back().activation_bytes, 0LL);  // every micro-batch's activations are freed by the end
    }
  }
}

void ModelsTest::sweep_matches_brute_force() {
  // GPipe keeps all M micro-batches' activations: on 40 GB devices the large-M cells
  // do not fit, so the best cell is not simply the largest K and M.
  PlanInputs in = default_inputs();
  in.choice.schedule = ScheduleKind::GPipe;
  Hardware small = *in.hardware;
  small.memory_bytes = 40000000000;
  in.hardware = std::make_shared<const Hardware>(small);
  const SweepAxes axes = default_sweep_axes(8, in.profile->num_layers());
  QCOMPARE(axes.stages.size(), std::size_t{8});
  QCOMPARE(axes.microbatches.size(), std::size_t{8});
  const SweepResult r = compute_sweep(in, axes);
  const BruteForce bf = brute_force(in, axes);
  QCOMPARE(r.cells.size(), bf.throughput.size());
  int not_fitting = 0;
  for (std::size_t i = 0; i < r.cells.size(); ++i) {
    const SweepCell& c = r.cells[i];
    const double expected = bf.throughput[i];
    QCOMPARE(c.valid && c.fits ? c.throughput : (c.valid ? -2.0 : -1.0), expected);
    not_fitting += c.valid && !c.fits;
  }
  QVERIFY2(not_fitting > 0, "the memory limit should exclude some cells");
  QVERIFY(bf.best >= 0);
  QCOMPARE(r.best, bf.best);
  const SweepCell& best = r.cells[r.best];
  qInfo("best gpipe cell on 40 GB: K=%d M=%d %.1f samples/s (%d cells do not fit)", best.stages, best.microbatches,
        best.throughput, not_fitting);
}

void ModelsTest::sweep_cancel_stops_after_the_cell_in_flight() {
  const PlanInputs in = default_inputs();
  const SweepAxes axes{{1, 2, 4}, {1, 2, 4, 8}};
  int calls = 0;
  const SweepResult r = compute_sweep(in, axes, [&](int done, int total) {
    ++calls;
    Q_ASSERT(total == 12);
    return done < 3;  // cancel once 3 cells are done
  });
  QVERIFY(r.cancelled);
  QCOMPARE(calls, 3);
  QCOMPARE(r.cells.size(), std::size_t{12});
  for (int i = 0; i < 12; ++i) QCOMPARE(r.cells[i].valid, i < 3);
}

void ModelsTest::sweep_model() {
  PlanInputs in = default_inputs();
  in.choice.schedule = ScheduleKind::Interleaved;
  in.choice.chunks = 2;
  SweepModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.set_result(compute_sweep(in, {{1, 2, 3, 4}, {2, 4, 6, 8}}));
  QCOMPARE(m.rowCount(), 4);
  QCOMPARE(m.columnCount(), 4);
  QCOMPARE(m.headerData(2, Qt::Vertical).toString(), QString("K=3"));
  QCOMPARE(m.headerData(1, Qt::Horizontal).toString(), QString("M=4"));
  // Interleaved needs M to be a multiple of K: K=3 with M=4 is impossible, K=3 with M=6 is not.
  QCOMPARE(m.data(m.index(2, 1), SweepModel::ValidRole).toBool(), false);
  QCOMPARE(m.data(m.index(2, 1)).toString(), QString("n/a"));
  QCOMPARE(m.data(m.index(2, 2), SweepModel::ValidRole).toBool(), true);
  const QModelIndex best = m.best_index();
  QVERIFY(best.isValid());
  QCOMPARE(m.data(best, SweepModel::BestRole).toBool(), true);
  QCOMPARE(m.data(best, SweepModel::HeatRole).toDouble(), 1.0);
  m.set_result({});
  QCOMPARE(m.rowCount(), 0);
  QVERIFY(!m.best_index().isValid());
}

void ModelsTest::compare_model() {
  const Evaluation e = evaluate(default_inputs());
  StepReport measured = e.report;
  measured.kind = "measurement";
  measured.step_ns = e.report.step_ns * 11 / 10;  // measured 10 % slower
  CompareModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  m.set_reports(e.report, measured);
  // compare_reports' rows: step, throughput, bubble, then per stage busy, weights,
  // gradients, optimizer state, peak activations, transients and peak memory (7 x 4).
  QCOMPARE(m.rowCount(), 3 + 7 * 4);
  QCOMPARE(m.data(m.index(0, CompareModel::Quantity)).toString(), QString("step_time_ms"));
  // (measured - predicted) / predicted = (1.1 - 1) / 1 = +10 %, as `pipescope compare` has it.
  const double err = m.data(m.index(0, CompareModel::ErrorPercent), CompareModel::RawRole).toDouble();
  QVERIFY2(std::fabs(err - 10.0) < 1e-3, qPrintable(QString::number(err)));
  QCOMPARE(m.data(m.index(1, CompareModel::ErrorPercent), CompareModel::RawRole).toDouble(), 0.0);
  QVERIFY(std::isnan(CompareModel::error_percent(0.0, 1.0)));
  // A measurement of 2 positions against a prediction of 4: the rows of the 2 both have
  // (the CLI refuses such a pair, compare_reports with StageMatch::Exact).
  measured.positions.resize(2);
  m.set_reports(e.report, measured);
  QCOMPARE(m.rowCount(), 3 + 7 * 2);
  QVERIFY_THROWS_EXCEPTION(InputError, compare_reports(e.report, measured));
}

void ModelsTest::chrome_trace_round_trip() {
  const Evaluation e = evaluate(default_inputs());
  const Timeline t = chrome_trace_to_timeline(chrome_trace(e.report), "trace.json");
  QCOMPARE(t.tracks, e.report.timeline.tracks);
  QCOMPARE(t.events.size(), e.report.timeline.events.size());
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const TimelineEvent& a = t.events[i];
    const TimelineEvent& b = e.report.timeline.events[i];
    QCOMPARE(a.track, b.track);
    QCOMPARE(a.category, b.category);
    QCOMPARE(a.stage, b.stage);
    QCOMPARE(a.microbatch, b.microbatch);
    QCOMPARE(a.start_ns, b.start_ns);  // the first event starts at 0, so the shift is 0
    QCOMPARE(a.duration_ns, b.duration_ns);
  }
  QCOMPARE(t.memory.size(), e.report.timeline.memory.size());
  QVERIFY_THROWS_EXCEPTION(InputError, chrome_trace_to_timeline("{\"traceEvents\": 3}", "bad.json"));
}

void ModelsTest::run_trace_shows_the_reported_step() {
  // A pipescope_torch run trace holds every timed step; otherData.median_step names the one
  // the measurement reports. Of step 1's seven spans on one rank the step span and the
  // wait are not drawn, the op is, and the p2p post and the loss draw as `runtime`.
  const std::string span = R"({"ph": "X", "tid": 0, "cat": "%1", "ts": %2, "dur": 10, "args": {"step": %3}})";
  QString events;
  for (int step = 0; step < 3; ++step) {
    for (const char* cat : {"step", "forward", "p2p_issue", "p2p_wait", "loss", "optimizer", "zero_grad"}) {
      events += QString::fromStdString(span).arg(cat).arg(step * 1000 + events.size() % 97).arg(step) + ",";
    }
  }
  events.chop(1);
  const std::string text = "{\"otherData\": {\"median_step\": 1}, \"traceEvents\": [" + events.toStdString() + "]}";
  const Timeline t = chrome_trace_to_timeline(text, "run.json");
  QStringList cats;
  for (const TimelineEvent& e : t.events) cats << QString::fromStdString(e.category);
  cats.sort();
  QCOMPARE(cats, (QStringList{"forward", "optimizer", "runtime", "runtime", "runtime"}));
}

void ModelsTest::interleaved_rows_pair_tracks_by_name() {
  Timeline a, b;
  a.tracks = {"device 0", "device 1", "link 0->1"};
  b.tracks = {"device 1", "device 0", "allreduce 0"};  // other order, one track a lacks
  a.events = {{0, "forward", 0, 0, 0, 10}, {2, "transfer", 1, 0, 10, 2}};
  b.events = {{0, "forward", 1, 0, 12, 11}, {2, "allreduce", -1, -1, 30, 5}};
  const Timeline m = interleave_timelines(a, "pred", b, "meas");
  const std::vector<std::string> expected = {"device 0 pred", "device 0 meas", "device 1 pred",
                                             "device 1 meas", "link 0->1 pred", "allreduce 0 meas"};
  QCOMPARE(m.tracks, expected);
  QCOMPARE(m.events.size(), std::size_t{4});
  QCOMPARE(m.events[0].track, 0);  // a's device 0
  QCOMPARE(m.events[1].track, 4);  // a's link
  QCOMPARE(m.events[2].track, 3);  // b's device 1 sits under a's device 1
  QCOMPARE(m.events[2].start_ns, 12LL);
  QCOMPARE(m.events[3].track, 5);
}

void ModelsTest::plan_worker_reports_only_the_latest() {
  PlanWorker w;
  QSignalSpy ready(&w, &PlanWorker::ready);
  PlanInputs in = default_inputs();
  w.request(in);
  in.choice.microbatches = 16;
  w.request(in);
  w.wait();
  QCoreApplication::processEvents();
  QCOMPARE(ready.count(), 1);
  auto e = ready.at(0).at(0).value<std::shared_ptr<const Evaluation>>();
  QCOMPARE(e->report.microbatches, 16);
  QVERIFY(!w.busy());
}

void ModelsTest::plan_worker_reports_failure() {
  PlanWorker w;
  QSignalSpy failed(&w, &PlanWorker::failed);
  PlanInputs in = default_inputs();
  in.choice.schedule = ScheduleKind::Interleaved;
  in.choice.chunks = 2;
  in.choice.microbatches = 6;  // not a multiple of K = 4
  w.request(in);
  w.wait();
  QCOMPARE(failed.count(), 1);
  QVERIFY(!failed.at(0).at(0).toString().isEmpty());
}

void ModelsTest::sweep_worker_matches_compute_sweep() {
  qRegisterMetaType<SweepResult>();
  const PlanInputs in = default_inputs();
  const SweepAxes axes{{1, 2, 4, 8}, {4, 16, 64}};
  SweepWorker w;
  QSignalSpy progress(&w, &SweepWorker::progress);
  QSignalSpy finished(&w, &SweepWorker::finished);
  w.start(in, axes);
  QVERIFY(finished.wait(60000));
  const SweepResult r = finished.at(0).at(0).value<SweepResult>();
  QCOMPARE(progress.count(), 12);
  QCOMPARE(progress.last().at(0).toInt(), 12);
  QCOMPARE(r.best, compute_sweep(in, axes).best);
  QVERIFY(!r.cancelled);
}

QTEST_GUILESS_MAIN(ModelsTest)
#include "models_test.moc"
