// Tests of the plan-choosing models without widgets: the one plans model over the
// planner's candidates (planner_plan_set.h): its points, dimensions and Pareto front
// against `pipescope sweep`'s CSV and an independent O(n^2) front; filters, and a
// dimension only llm-plan's layouts have refused; loading a candidate reproduces its numbers; the A/B deltas;
// row grouping and busy density for timelines at scale; what-if hardware; the
// schedule list. Every model runs under QAbstractItemModelTester.
#include <QAbstractItemModelTester>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "core/error.h"
#include "gui/models/ab_model.h"
#include "gui/models/memory_curves.h"
#include "gui/models/palette.h"
#include "gui/models/plan_search.h"
#include "gui/models/planner_plan_set.h"
#include "gui/models/plot_scale.h"
#include "gui/models/schedule_names.h"
#include "gui/models/step_distribution.h"
#include "gui/models/timeline_model.h"
#include "gui/models/timeline_rows.h"
#include "gui/models/what_if.h"
#include "gui/tests/uniform_plan.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using namespace pipescope::gui;

namespace {

PlanInputs gpt_inputs(int microbatches) {
  PlanInputs in;
  in.profile = std::make_shared<const Profile>(load_profile(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-1.3b-h200.json"));
  in.hardware = std::make_shared<const Hardware>(load_hardware(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/h200-8x-nvlink.json"));
  in.choice.stages = 4;
  in.choice.microbatches = microbatches;
  return in;
}

// One row of `pipescope sweep`'s CSV.
struct SweepRow {
  QString schedule;
  int chunks, stages, replicas, microbatches;
  bool recompute;
  double step_ms;
  qlonglong peak_bytes;
  bool fits, pareto;
};

std::vector<SweepRow> read_sweep_csv(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  std::vector<SweepRow> rows;
  const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
  for (int i = 1; i < lines.size(); ++i) {
    const QStringList c = lines[i].split(',');
    rows.push_back({c[1], c[2].toInt(), c[3].toInt(), c[4].toInt(), c[5].toInt(), c[7] == "1", c[8].toDouble(),
                    c[12].toLongLong(), c[13] == "1", c[14] == "1"});
  }
  return rows;
}

// The front by definition, independently of the planner: a fitting candidate is on it
// unless some fitting candidate before it in (peak, step, index) order is at least as fast.
std::set<int> front_by_definition(const SearchResult& r) {
  std::set<int> front;
  for (const Candidate& c : r.candidates) {
    if (!c.fits) continue;
    bool dominated = false;
    for (const Candidate& d : r.candidates) {
      if (!d.fits || d.index == c.index) continue;
      const bool before = std::tie(d.peak_bytes, d.step_ns, d.index) < std::tie(c.peak_bytes, c.step_ns, c.index);
      if (before && d.step_ns <= c.step_ns) dominated = true;
    }
    if (!dominated) front.insert(c.index);
  }
  return front;
}

}  // namespace

class PlansModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void schedule_names_are_the_core_names();
  void plans_points_and_front_equal_pipescope_sweep();
  void planner_points_are_the_closed_form_step();
  void plans_filters_hide_rows_but_keep_the_front();
  void loading_a_candidate_reproduces_its_numbers();
  void ab_model_differences();
  void timeline_rows_label_every_row_data();
  void timeline_rows_label_every_row();
  void timeline_rows_tile_the_tracks_property();
  void busy_fraction_matches_the_closed_form();
  void what_if_changes_the_hardware();
  void slow_device_doubles_a_one_stage_step();
  void what_if_takes_the_optimizer_step_and_p2p();
  void what_if_takes_the_runtime();
  void plot_scale_and_ticks();
  void every_schedule_has_its_own_colour();
  void memory_axis_zooms_to_the_points();
  void memory_column_max_keeps_every_peak();
  void plans_mark_offload_and_keep_the_point_without();
};

void PlansModelsTest::schedule_names_are_the_core_names() {
  // Every name the GUI lists parses in core and prints back the same (one list, core's words).
  const QStringList names = schedule_names();
  QStringList core;
  for (ScheduleKind k : pipescope::schedule_kinds()) core << QString::fromStdString(to_string(k));
  QCOMPARE(names, core);
  QVERIFY(names.size() >= 4);  // gpipe, 1f1b, interleaved, zb-h1 at least
  for (const QString& n : names) QCOMPARE(QString::fromStdString(to_string(parse_schedule_kind(n.toStdString()))), n);
}

void PlansModelsTest::plans_points_and_front_equal_pipescope_sweep() {
  // D = 8 (the hardware file), N = 1 x 16 = 16: the GUI's request is `pipescope sweep -D 8 -N 16`.
  const PlanInputs in = gpt_inputs(16);
  const SearchRequest q = plans_request(in);
  QCOMPARE(q.devices, 8);
  QCOMPARE(q.batch, int64_t{16});
  QTemporaryDir dir;
  QProcess cli;
  cli.start(PIPESCOPE_BINARY, {"sweep", "--profile", QString(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-1.3b-h200.json", "--hardware",
                                QString(PIPESCOPE_SOURCE_DIR) + "/profiles/h200-8x-nvlink.json", "-D", "8", "-N", "16", "-o",
                                dir.filePath("sweep")});
  QVERIFY(cli.waitForFinished(300000));
  QCOMPARE(cli.exitCode(), 0);
  const std::vector<SweepRow> rows = read_sweep_csv(dir.filePath("sweep.csv"));
  QVERIFY(!rows.empty());

  auto result = std::make_shared<const SearchResult>(search_plans(q));
  PlansModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
  m.set_plans(plan_set_of(*result));
  QCOMPARE(m.rowCount(), static_cast<int>(rows.size()));
  std::set<int> sweep_front;
  for (int i = 0; i < m.rowCount(); ++i) {
    const SweepRow& s = rows[static_cast<std::size_t>(i)];
    QCOMPARE(m.entry(i), i);
    QCOMPARE(m.value_name(i, "schedule"), s.schedule);
    QCOMPARE(m.value(i, "v"), s.chunks);
    QCOMPARE(m.value(i, "K"), s.stages);
    QCOMPARE(m.value(i, "r"), s.replicas);
    QCOMPARE(m.value(i, "M"), s.microbatches);
    QCOMPARE(m.value(i, "recompute"), s.recompute ? 1 : 0);
    QCOMPARE(m.data(m.index(i, 0), PlansModel::PeakBytesRole).toLongLong(), s.peak_bytes);
    const double step_ms = static_cast<double>(m.data(m.index(i, 0), PlansModel::StepNsRole).toLongLong()) / 1e6;
    QVERIFY(std::fabs(step_ms - s.step_ms) <= 1e-9 * s.step_ms);
    QCOMPARE(m.data(m.index(i, 0), PlansModel::FitsRole).toBool(), s.fits);
    QCOMPARE(m.data(m.index(i, 0), PlansModel::ParetoRole).toBool(), s.pareto);
    if (s.pareto) sweep_front.insert(i);
  }
  const std::vector<int> front = m.front();
  QCOMPARE(std::set<int>(front.begin(), front.end()), sweep_front);
  QCOMPARE(sweep_front, front_by_definition(*result));
  QVERIFY(sweep_front.size() >= 1);
  // Peak memory ascending along the front, throughput rising with it.
  for (std::size_t k = 1; k < front.size(); ++k) {
    QVERIFY(result->candidates[front[k]].peak_bytes >= result->candidates[front[k - 1]].peak_bytes);
    QVERIFY(result->candidates[front[k]].step_ns < result->candidates[front[k - 1]].step_ns);
  }
  qInfo("%zu candidates, %zu on the front (as pipescope sweep)", rows.size(), sweep_front.size());
}

// One device, 16 uniform blocks (1 ms forward, 2 ms backward per sample, linear in the
// micro-batch size), N = 1 x 8: the GUI's search, filtered to 1F1B without recompute,
// leaves K = 1, r = 1 and M = 1, 2, 4, 8 (M | N), each 8 x 16 x 3 ms = 384 ms (nothing to
// communicate). The
// former plans model drew them at 8 / 0.384 s = 20.83 samples/s; the one model draws them
// at 384 ms. Across: the peak per device, in GiB (2^30 B) on the axis: 64 MiB of
// parameters, 64 of gradients, 128 of optimizer state (2 bytes per parameter byte) and one
// micro-batch of 8 / M samples stashed, 16 blocks x 1 MiB each: 384, 320, 288, 272 MiB.
void PlansModelsTest::planner_points_are_the_closed_form_step() {
  constexpr int64_t MiB = int64_t{1} << 20;
  const SearchResult r = search_plans(plans_request(uniform_inputs(16, 1, 8)));
  PlansModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
  m.set_plans(plan_set_of(r));
  m.set_filter("schedule", static_cast<int>(ScheduleKind::OneFOneB));
  m.set_filter("recompute", 0);
  QCOMPARE(m.rowCount(), 4);
  QCOMPARE(m.values("M"), std::vector<int>({1, 2, 4, 8}));
  QCOMPARE(m.values("K"), std::vector<int>({1}));
  for (int row = 0; row < m.rowCount(); ++row) {
    const Candidate& c = r.candidates[static_cast<std::size_t>(m.entry(row))];
    QCOMPARE(m.at(row).point.step_ns, int64_t{384000000});
    QVERIFY(std::fabs(c.throughput_samples_per_s - 8 / 0.384) < 1e-9);
    QCOMPARE(m.at(row).point.peak_bytes, c.peak_bytes);
    QCOMPARE(m.at(row).point.peak_bytes, (256 + 16 * (8 / c.microbatches)) * MiB);
    QCOMPARE(m.data(m.index(row, PlansModel::StepMs)).toString(), QString("384.000"));
    QCOMPARE(m.data(m.index(row, PlansModel::Peak)).toString(),
             QString::number(static_cast<double>(c.peak_bytes) / (1 << 30), 'f', 2));
  }
  QCOMPARE(m.plans()->unit.bytes, 1073741824.0);
  QCOMPARE(m.headerData(PlansModel::Peak, Qt::Horizontal).toString(), QString("Peak GiB"));
}

void PlansModelsTest::plans_filters_hide_rows_but_keep_the_front() {
  const PlanInputs in = gpt_inputs(8);
  auto result = std::make_shared<const SearchResult>(search_plans(plans_request(in)));
  PlansModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
  m.set_plans(plan_set_of(*result));
  const std::vector<int> front = m.front();
  int n_1f1b = 0, n_k4 = 0, n_recompute = 0, n_1f1b_k4_off = 0;
  for (const Candidate& c : result->candidates) {
    const bool f = c.schedule == ScheduleKind::OneFOneB, k = c.stages == 4;
    n_1f1b += f;
    n_k4 += k;
    n_recompute += has_r_ops(c.recompute);
    n_1f1b_k4_off += f && k && c.recompute == Recompute::None;
  }
  m.set_filter("schedule", static_cast<int>(ScheduleKind::OneFOneB));
  QCOMPARE(m.rowCount(), n_1f1b);
  for (int i = 0; i < m.rowCount(); ++i) QCOMPARE(m.value_name(i, "schedule"), QString("1f1b"));
  m.set_filter("K", 4);
  m.set_filter("recompute", 0);
  QCOMPARE(m.rowCount(), n_1f1b_k4_off);
  QCOMPARE(m.front(), front);  // the front is the search's, whatever is shown
  m.set_filter("schedule", -1);
  m.set_filter("recompute", -1);
  QCOMPARE(m.rowCount(), n_k4);
  m.set_filter("K", -1);
  m.set_filter("recompute", 1);
  QCOMPARE(m.rowCount(), n_recompute);
  QCOMPARE(m.values("K"), std::vector<int>({1, 2, 4, 8}));
  // The candidates have no t or sharding (llm-plan's layouts do): refused (the message:
  // llm_plans_models_test.cpp), and the rows stay as they were.
  QVERIFY_THROWS_EXCEPTION(InputError, m.set_filter("t", 2));
  QVERIFY_THROWS_EXCEPTION(InputError, m.set_colour_by("sharding"));
  QCOMPARE(m.rowCount(), n_recompute);
  QCOMPARE(m.colour_by(), QString("schedule"));
}

void PlansModelsTest::loading_a_candidate_reproduces_its_numbers() {
  // The plans view loads a candidate by evaluating its own plan: the simulator must give
  // the search's step and peak byte for byte (same plan, same hardware, same calls).
  const PlanInputs in = gpt_inputs(8);
  const SearchResult r = search_plans(plans_request(in));
  const int64_t batch = plans_batch(in);
  int checked = 0;
  for (const Candidate& c : r.candidates) {
    if (c.index % 5 != 0 && !c.pareto) continue;  // a spread of them, and the whole front
    PlanInputs load = in;
    load.choice = choice_of(c, batch, in.choice);
    load.plan = c.plan;
    load.record_timeline = false;
    const Evaluation e = evaluate(load);
    QCOMPARE(e.report.step_ns, c.step_ns);
    QCOMPARE(e.report.peak_memory_bytes(), c.peak_bytes);
    QCOMPARE(load.choice.microbatch_size * load.choice.microbatches, static_cast<double>(batch));
    ++checked;
  }
  QVERIFY(checked > 3);
}

void PlansModelsTest::ab_model_differences() {
  PlanInputs a_in = gpt_inputs(8), b_in = gpt_inputs(16);
  b_in.choice.stages = 8;
  a_in.record_timeline = b_in.record_timeline = false;
  const StepReport a = evaluate(a_in).report, b = evaluate(b_in).report;
  AbModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
  m.set_reports(a, b);
  // step, throughput, bubble, then max(4, 8) = 8 stages.
  QCOMPARE(m.rowCount(), 3 + 8);
  auto raw = [&](int row, int col) { return m.data(m.index(row, col), AbModel::RawRole); };
  QCOMPARE(raw(AbModel::StepTime, AbModel::A).toDouble(), static_cast<double>(a.step_ns));
  QCOMPARE(raw(AbModel::StepTime, AbModel::Delta).toDouble(), static_cast<double>(b.step_ns - a.step_ns));
  QCOMPARE(raw(AbModel::Throughput, AbModel::Relative).toDouble(),
           (b.throughput_samples_per_s - a.throughput_samples_per_s) / a.throughput_samples_per_s);
  QCOMPARE(raw(AbModel::Bubble, AbModel::B).toDouble(), b.bubble_fraction);
  QCOMPARE(raw(AbModel::FirstStage + 2, AbModel::Delta).toDouble(),
           static_cast<double>(b.positions[2].peak_memory_bytes - a.positions[2].peak_memory_bytes));
  // Stage 6 exists only in B: "-" for A and no difference.
  QCOMPARE(m.data(m.index(AbModel::FirstStage + 6, AbModel::A)).toString(), QString("-"));
  QVERIFY(!raw(AbModel::FirstStage + 6, AbModel::Delta).isValid());
  // Same plan on both sides: every difference is zero.
  m.set_reports(a, a);
  for (int row = 0; row < m.rowCount(); ++row) QCOMPARE(raw(row, AbModel::Delta).toDouble(), 0.0);
}

void PlansModelsTest::timeline_rows_label_every_row_data() {
  QTest::addColumn<int>("devices");
  QTest::addColumn<int>("links");
  QTest::addColumn<int>("height");
  QTest::addColumn<int>("mode");
  QTest::addColumn<int>("rows");
  QTest::addColumn<QString>("first");
  QTest::addColumn<QString>("last");
  // 420 px at 14 px a row: 30 labelled rows.
  QTest::newRow("K=4: every track its own row") << 4 << 6 << 420 << 0 << 10 << "device 0" << "link 5";
  QTest::newRow("K=16: links collapse, devices stay single") << 16 << 30 << 420 << 0 << 17 << "device 0" << "links (30)";
  // 64 devices in 29 rows: groups of ceil(64/29) = 3, 22 rows, then the links row.
  QTest::newRow("K=64: groups of 3") << 64 << 126 << 420 << 0 << 23 << "devices 0-2" << "links (126)";
  QTest::newRow("K=512: groups of 18") << 512 << 1022 << 420 << 0 << 30 << "devices 0-17" << "links (1022)";
  QTest::newRow("collapsed on request") << 4 << 6 << 420 << 2 << 5 << "device 0" << "links (6)";
  // Expanded on request but 16 + 30 > 30: devices keep 16 rows, links share the other 14
  // in groups of ceil(30 / 14) = 3: 10 rows, the last "links 27 .. 29".
  QTest::newRow("expanded on request at K=16") << 16 << 30 << 420 << 1 << 26 << "device 0" << "links 27 .. 29";
}

void PlansModelsTest::timeline_rows_label_every_row() {
  QFETCH(int, devices);
  QFETCH(int, links);
  QFETCH(int, height);
  QFETCH(int, mode);
  QFETCH(int, rows);
  QFETCH(QString, first);
  QFETCH(QString, last);
  std::vector<QString> names;
  for (int d = 0; d < devices; ++d) names.push_back(QString("device %1").arg(d));
  for (int l = 0; l < links; ++l) names.push_back(QString("link %1").arg(l));
  const auto r = timeline_rows(names, height, 14, static_cast<LinkRows>(mode));
  QCOMPARE(static_cast<int>(r.size()), rows);
  QCOMPARE(r.front().label, first);
  QCOMPARE(r.back().label, last);
}

void PlansModelsTest::timeline_rows_tile_the_tracks_property() {
  const unsigned seed = 20;
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 500; ++trial) {
    const int devices = std::uniform_int_distribution<int>(0, 600)(rng);
    const int links = std::uniform_int_distribution<int>(0, 1200)(rng);
    const int height = std::uniform_int_distribution<int>(20, 2000)(rng);
    const int mode = std::uniform_int_distribution<int>(0, 2)(rng);
    if (devices + links == 0) continue;
    std::vector<QString> names;
    for (int d = 0; d < devices; ++d) names.push_back(QString("device %1").arg(d));
    for (int l = 0; l < links; ++l) names.push_back(QString("link %1->%2").arg(l).arg(l + 1));
    const auto r = timeline_rows(names, height, 14, static_cast<LinkRows>(mode));
    const QString where = QString("seed %1 trial %2: %3 devices, %4 links, %5 px, mode %6")
                              .arg(seed).arg(trial).arg(devices).arg(links).arg(height).arg(mode);
    int next = 0;
    for (const TimelineRow& row : r) {
      QVERIFY2(row.first_track == next && row.end_track > row.first_track, qPrintable(where));
      QVERIFY2(!row.label.isEmpty(), qPrintable(where));
      next = row.end_track;
    }
    QVERIFY2(next == devices + links, qPrintable(where));
    // Every row keeps 14 px (so a label fits) whenever the budget has room for one device row and one link row.
    const int budget = height / 14;
    if (budget >= 2) QVERIFY2(static_cast<int>(r.size()) <= budget, qPrintable(where + QString(": %1 rows").arg(r.size())));
  }
}

void PlansModelsTest::busy_fraction_matches_the_closed_form() {
  // 16 uniform blocks, K = 4 (4 blocks a stage: t_f = 4 ms, t_b = 8 ms), M = 8, 1F1B, free links:
  // step = (M + K - 1)(t_f + t_b) = 132 ms and each device is busy M (t_f + t_b) = 96 ms,
  // so one bin over the step holds 96 / 132 = 8 / 11 on every device.
  PlanInputs in = uniform_inputs(16, 4, 8);
  in.hardware.reset();  // ideal hardware: no communication
  const StepReport r = evaluate(in).report;
  QCOMPARE(r.step_ns, int64_t{132000000});
  TimelineModel m;
  m.set_timeline(r.timeline, r.step_ns);
  QCOMPARE(m.mean_op_ns(), 6e6);  // (4 + 8) / 2 ms
  for (int d = 0; d < 4; ++d) {
    const std::vector<float> one = m.busy_fraction(d, d + 1, 0, 132e6, 1);
    QVERIFY(std::fabs(one[0] - 8.0f / 11.0f) < 1e-6f);
    // In 1000 bins the busy time sums to the same 96 ms; the first F of device d starts at
    // d t_f = 4d ms, so bins before it are empty and the bin right after is full.
    const std::vector<float> bins = m.busy_fraction(d, d + 1, 0, 132e6 / 1000, 1000);
    double busy = 0;
    for (float f : bins) busy += f * 132e6 / 1000;
    QVERIFY(std::fabs(busy - 96e6) < 1e3);
    if (d > 0) QCOMPARE(bins[0], 0.0f);
    QCOMPARE(bins[static_cast<std::size_t>(4e6 * d / 132e3) + 1], 1.0f);
  }
  // All four devices together: the same 8 / 11 as a mean; summed, 4 x 8 / 11 caps at 1.
  QVERIFY(std::fabs(m.busy_fraction(0, 4, 0, 132e6, 1)[0] - 8.0f / 11.0f) < 1e-6f);
  QCOMPARE(m.busy_fraction(0, 4, 0, 132e6, 1, TimelineModel::Combine::Sum)[0], 1.0f);
  // Two devices over the step summed: 2 x 96 ms in 132 ms still caps at 1; over 264 ms it is 192 / 264.
  QVERIFY(std::fabs(m.busy_fraction(0, 2, 0, 264e6, 1, TimelineModel::Combine::Sum)[0] - 192.0f / 264.0f) < 1e-6f);
}

void PlansModelsTest::what_if_changes_the_hardware() {
  const Hardware h = load_hardware(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/h200-8x-nvlink.json");
  const Hardware same = apply_what_if(h, {});
  QCOMPARE(same.name, h.name);
  QCOMPARE(same.link.bandwidth_gb_per_s, 450.0);
  QVERIFY(same.speed.empty());
  WhatIf w;
  w.bandwidth_gb_per_s = 25;
  w.latency_us = 0;
  w.slow_device = 3;
  w.slow_speed = 0.5;
  const Hardware c = apply_what_if(h, w);
  QCOMPARE(c.link.bandwidth_gb_per_s, 25.0);
  QCOMPARE(c.inter_node.bandwidth_gb_per_s, 25.0);
  QCOMPARE(c.link.latency_us, 0.0);
  QCOMPARE(c.speed, std::vector<double>({1, 1, 1, 0.5, 1, 1, 1, 1}));
  w.slow_device = 8;
  QVERIFY_THROWS_EXCEPTION(InputError, apply_what_if(h, w));
  // Slower links make the GPT plan's step longer (transfers lie on its critical path).
  PlanInputs in = gpt_inputs(8);
  in.record_timeline = false;
  const int64_t before = evaluate(in).report.step_ns;
  in.what_if.bandwidth_gb_per_s = 1;
  QVERIFY(evaluate(in).report.step_ns > before);
}

void PlansModelsTest::slow_device_doubles_a_one_stage_step() {
  // K = 1: all 16 blocks on device 0, M = 8: step = 8 (16 + 32) ms = 384 ms; at half speed 768 ms.
  PlanInputs in = uniform_inputs(16, 1, 8);
  in.record_timeline = false;
  QCOMPARE(evaluate(in).report.step_ns, int64_t{384000000});
  in.what_if.slow_device = 0;
  in.what_if.slow_speed = 0.5;
  QCOMPARE(evaluate(in).report.step_ns, int64_t{768000000});
}

void PlansModelsTest::what_if_takes_the_optimizer_step_and_p2p() {
  // The CLI's --optimizer-step and --p2p as what-if: blocking p2p charges each transfer
  // to its devices, so the GPT plan (transfers on its critical path) gets slower, and the
  // distribution samples the same mode (its jitter-free step is the evaluation's);
  // post-validation simulates 3 steps and is never slower than synchronized.
  PlanInputs in = gpt_inputs(8);
  in.record_timeline = false;
  const Evaluation overlapped = evaluate(in);
  QCOMPARE(overlapped.report.steps, 1);
  in.what_if.p2p = P2p::Blocking;
  const Evaluation blocking = evaluate(in);
  QVERIFY(blocking.report.step_ns > overlapped.report.step_ns);
  QVERIFY(!in.what_if.active());  // the hardware itself is unchanged
  JitterSpec j;
  j.samples = 4;
  j.threads = 1;
  const StepHistogram h = sample_plan(blocking, hardware_for(in, blocking.plan), j, 4);
  QCOMPARE(h.deterministic_ms, static_cast<double>(blocking.report.step_ns) / 1e6);
  in.what_if.p2p = P2p::Overlapped;
  in.what_if.optimizer_step = OptimizerStep::PostValidation;
  const Evaluation post = evaluate(in);
  QCOMPARE(post.plan.optimizer_step, OptimizerStep::PostValidation);
  QCOMPARE(post.report.steps, 3);
  QVERIFY(post.report.ranked_step_ns() <= overlapped.report.step_ns);
}

void PlansModelsTest::what_if_takes_the_runtime() {
  // --runtime as what-if (core/runtime_costs.h): a prologue of 1 ms and an epilogue of 2 ms
  // on every device shift every op by 1 ms and every device's end by 3 ms, so the step
  // grows by exactly 3 ms, and the timeline shows both on each position's track.
  PlanInputs in = gpt_inputs(8);
  const Evaluation plain = evaluate(in);
  auto rt = std::make_shared<RuntimeCosts>();
  rt->prologue_ns = 1'000'000;
  rt->epilogue_ns = 2'000'000;
  in.what_if.runtime = rt;
  const Evaluation charged = evaluate(in);
  QCOMPARE(charged.report.step_ns, plain.report.step_ns + 3'000'000);
  int runtime_events = 0;
  for (const TimelineEvent& e : charged.report.timeline.events) runtime_events += e.category == "runtime";
  QCOMPARE(runtime_events, 2 * charged.report.num_positions);
}

void PlansModelsTest::plot_scale_and_ticks() {
  const LinearScale x{0, 200, 100, 900};
  QCOMPARE(x.px(50), 300.0);
  QCOMPARE(x.value(300), 50.0);
  const LinearScale y{0, 10, 500, 100};  // y grows downwards
  QCOMPARE(y.px(10), 100.0);
  QCOMPARE(y.value(300), 5.0);
  QCOMPARE(nice_tick_step(10, 5), 2.0);     // 10 / 5 = 2
  QCOMPARE(nice_tick_step(141, 5), 50.0);   // 28.2 -> 50
  QCOMPARE(nice_tick_step(1, 10), 0.1);
  QCOMPARE(ramp_color(0), QColor(68, 1, 84));
  QCOMPARE(ramp_color(1), QColor(253, 231, 37));
}

void PlansModelsTest::every_schedule_has_its_own_colour() {
  // gpipe and 2bw once shared a colour (a 9-colour cycle over 10 schedules): every pair
  // of the 15 schedules, and each against the does-not-fit red, is now at least 60 apart in RGB.
  const std::vector<ScheduleKind>& kinds = pipescope::schedule_kinds();
  QCOMPARE(static_cast<int>(kinds.size()), 15);
  auto distance = [](const QColor& a, const QColor& b) {
    return std::hypot(a.red() - b.red(), a.green() - b.green(), a.blue() - b.blue());
  };
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    QVERIFY2(distance(schedule_color(kinds[i]), does_not_fit_color()) >= 60, to_string(kinds[i]).c_str());
    for (std::size_t j = i + 1; j < kinds.size(); ++j) {
      QVERIFY2(distance(schedule_color(kinds[i]), schedule_color(kinds[j])) >= 60,
               (to_string(kinds[i]) + " vs " + to_string(kinds[j])).c_str());
    }
  }
  QVERIFY(schedule_color(ScheduleKind::GPipe) != schedule_color(ScheduleKind::PipeDream2BW));
}

void PlansModelsTest::memory_axis_zooms_to_the_points() {
  constexpr int64_t GiB = int64_t{1} << 30;
  // Points below 20 GiB on 141 GiB devices: the axis ends at 22 GiB (1.1 x 20), the
  // capacity marked at the edge.
  MemoryAxis a = memory_axis(20 * GiB, 141 * GiB);
  QCOMPARE(a.top, 22.0 * GiB);
  QVERIFY(a.capacity_beyond && !a.capacity_inside);
  // The capacity within 1.25 x of the points' end: the axis reaches 1.02 x it.
  a = memory_axis(100 * GiB, 120 * GiB);
  QCOMPARE(a.top, 1.02 * 120 * GiB);
  QVERIFY(a.capacity_inside && !a.capacity_beyond);
  // Points past the capacity (misfits): 1.1 x the largest, the capacity inside.
  a = memory_axis(100 * GiB, 50 * GiB);
  QCOMPARE(a.top, 110.0 * GiB);
  QVERIFY(a.capacity_inside);
  // No capacity (ideal hardware), no points.
  QVERIFY(!memory_axis(10 * GiB, 0).capacity_inside && !memory_axis(10 * GiB, 0).capacity_beyond);
  QCOMPARE(memory_axis(0, 0).top, 1.0);
  // The GPT-1.3B search on 8 x H200: every peak sits far below the 131 GiB, so the
  // model's axis zooms to its points.
  PlansModel m;
  const SearchResult gpt = search_plans(plans_request(gpt_inputs(8)));
  m.set_plans(plan_set_of(gpt));
  const MemoryAxis g = m.memory_axis();
  QCOMPARE(g.top, 1.1 * static_cast<double>(m.max_peak_bytes()));
  QVERIFY(g.capacity_beyond);
  QCOMPARE(m.plans()->capacity_bytes, gpt.memory_limit_bytes);
  QVERIFY(g.top < static_cast<double>(gpt.memory_limit_bytes) / 2);
}

void PlansModelsTest::memory_column_max_keeps_every_peak() {
  // Steps 0 @ 0, 5 @ 10, 0 @ 15, 7 @ 50 over 100 ns in 10 columns of 10 ns: column 1 holds
  // the short peak 5, columns 2-4 the 0 held from 15, columns 5-9 the 7 held to the end.
  StageMemoryCurve c;
  c.steps = {{0, 0, 0}, {10, 3, 2}, {15, 0, 0}, {50, 7, 0}};  // activations + transients
  QCOMPARE(column_max(c, 100, 10), std::vector<int64_t>({0, 5, 0, 0, 0, 7, 7, 7, 7, 7}));
  // At scale the largest column equals the curve's peak (the invariant of memory_curves).
  const StepReport r = evaluate(uniform_inputs(64, 64, 256)).report;
  const MemoryCurves curves = memory_curves(r);
  for (const StageMemoryCurve& s : curves.stages) {
    const std::vector<int64_t> cols = column_max(s, curves.end_ns, 1300);
    QCOMPARE(s.static_bytes + *std::max_element(cols.begin(), cols.end()), s.peak_bytes);
  }
}

// Memory binds every candidate and the host link is infinitely fast (bandwidth 0): GPipe
// on 2 layers and 2 devices fits only with offload (the planner's own test,
// tests/planner/planner_offload_test.cpp), so the search takes selective for the winner.
// The model says so (its offload value), and its point without offload is the search's
// first trial: the largest per-position peak of that run and that run's step.
void PlansModelsTest::plans_mark_offload_and_keep_the_point_without() {
  SearchRequest q;
  q.profile = *uniform_profile(2);
  q.profile_path = "uniform.json";
  q.hardware = *nvlink_hardware(2);
  q.hardware.host_link = HostLink{{0.0, 0.0}, {0.0, 0.0}};
  q.devices = 2;
  q.batch = 8;
  q.schedules = {ScheduleKind::GPipe};
  q.recomputes = {Recompute::None};
  q.threads = 1;
  q.hardware.memory_bytes = 0;
  int64_t least = 0;
  for (const Candidate& c : search_plans(q).candidates) least = least == 0 ? c.peak_bytes : std::min(least, c.peak_bytes);
  q.hardware.memory_bytes = least - 1;
  PlansModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
  const SearchResult result = search_plans(q);
  m.set_plans(plan_set_of(result));
  const int w = winner(result).index;
  int offloaded = 0;
  for (int row = 0; row < m.rowCount(); ++row) {
    const Candidate& c = result.candidates[static_cast<std::size_t>(m.entry(row))];
    const QString policy = m.value_name(row, "offload");
    const std::optional<PlanPoint> before = m.at(row).without_offload;
    QCOMPARE(m.at(row).offload, c.plan.offload.active());
    if (!c.offload_chosen) {
      QCOMPARE(policy, QString("none"));
      QVERIFY(!before);
      continue;
    }
    ++offloaded;
    QCOMPARE(policy, QString::fromStdString(to_string(c.plan.offload.policy)));
    QVERIFY(before.has_value());
    const Candidate::OffloadTrial& none = c.offload_trials.front();
    QCOMPARE(before->peak_bytes, *std::max_element(none.stage_peak_bytes.begin(), none.stage_peak_bytes.end()));
    QVERIFY(before->peak_bytes > c.peak_bytes);
    QCOMPARE(before->step_ns, none.step_ns);  // the former model's 8 samples / this step
    QVERIFY(m.data(m.index(row, 0), Qt::ToolTipRole).toString().contains("activation offload"));
    // Loading it (the plans view's click) simulates its plan with its offload: the
    // search's step and peak byte for byte.
    PlanInputs load;
    load.profile = std::make_shared<const Profile>(q.profile);
    load.hardware = std::make_shared<const Hardware>(q.hardware);
    load.choice = choice_of(c, q.batch, load.choice);
    load.plan = c.plan;
    load.record_timeline = false;
    const Evaluation e = evaluate(load);
    QCOMPARE(e.report.step_ns, c.step_ns);
    QCOMPARE(e.report.peak_memory_bytes(), c.peak_bytes);
  }
  QVERIFY(offloaded > 0);
  QCOMPARE(m.value_name(m.row_of(w), "offload"), QString("selective"));
}

QTEST_GUILESS_MAIN(PlansModelsTest)
#include "plans_models_test.moc"
