// The memory chart draws the sum the simulator predicts: static bytes +
// stashed activations + transients, the transients as their own series and colour.
// Its highest point per stage equals `pipescope simulate --json`'s peak_memory_bytes
// for the same plan (the CLI is run here and its numbers read back), and the numbers
// are stated for gpt-tiny-cpu, K = 2, M = 4, micro-batch 2. A profile without
// workspace_bytes has no transients, and the chart says so instead of drawing them.
#include <QImage>
#include <QtTest>
#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "core/json_reader.h"
#include "core/profile.h"
#include "core/schedule.h"
#include "gui/app/memory_view.h"
#include "gui/models/memory_curves.h"
#include "gui/models/palette.h"
#include "gui/models/plan_evaluation.h"
#include "gui/models/trace_reader.h"
#include "gui/tests/uniform_plan.h"
#include "planner/zero_bubble_search.h"
#include "sim/simulator.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using namespace pipescope::gui;

namespace {

const std::string kTinyProfile = std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-tiny-cpu.json";  // has workspace_bytes

PlanInputs tiny_inputs(ScheduleKind kind, int chunks = 1) {
  PlanInputs in;
  in.profile = std::make_shared<const Profile>(load_profile(kTinyProfile));
  in.choice.stages = 2;
  in.choice.microbatches = 4;
  in.choice.microbatch_size = 2;
  in.choice.schedule = kind;
  in.choice.chunks = chunks;
  return in;
}

// peak_memory_bytes per stage from `pipescope simulate --json` with these flags.
std::vector<int64_t> cli_peaks(const std::string& flags) {
  const std::string cmd = std::string(PIPESCOPE_BINARY) + " simulate --profile " + kTinyProfile +
                          " -K 2 -M 4 --microbatch-size 2 --json " + flags;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  if (pclose(pipe) != 0) throw std::runtime_error("failed: " + cmd);
  std::vector<int64_t> peaks;
  for (const JsonReader& st : JsonReader::from_text(out, "simulate --json")["stages"].items()) {
    peaks.push_back(st["peak_memory_bytes"].as_int());
  }
  return peaks;
}

int64_t drawn_peak(const StageMemoryCurve& c) {
  int64_t m = 0;
  for (const MemoryStep& s : c.steps) m = std::max(m, c.static_bytes + s.above_static());
  return m;
}

// The most transient bytes `device` holds right after an op of `category` ends: the
// first memory sample at its end time is what the op leaves held (the simulator
// samples an op's end before the start of an op at the same time).
int64_t held_after(const StepReport& r, int device, const std::string& category) {
  int64_t held = 0;
  for (const TimelineEvent& e : r.timeline.events) {
    if (e.track != device || e.category != category) continue;
    const int64_t end = e.start_ns + e.duration_ns;
    for (const MemorySample& m : r.timeline.memory) {
      if (m.position == device && m.time_ns == end) {
        held = std::max(held, m.transient_bytes);
        break;
      }
    }
  }
  return held;
}

int count_pixels(const QImage& image, const QRect& area, const QColor& color) {
  int n = 0;
  for (int y = area.top(); y <= area.bottom(); ++y) {
    for (int x = area.left(); x <= area.right(); ++x) n += image.pixelColor(x, y) == color;
  }
  return n;
}

}  // namespace

class MemoryTest : public QObject {
  Q_OBJECT
 private slots:
  void drawn_peak_equals_simulate_json_data();
  void drawn_peak_equals_simulate_json();
  void zb_h1_holds_output_gradients_from_i_to_w();
  void activation_band_drops_at_i_and_holds_w();
  void no_transients_without_workspace_bytes();
  void chrome_trace_keeps_transients();
  void view_draws_transients_in_their_own_colour();
  void host_curve_holds_what_the_offload_sent();
};

void MemoryTest::drawn_peak_equals_simulate_json_data() {
  QTest::addColumn<int>("kind");
  QTest::addColumn<int>("chunks");
  QTest::addColumn<QString>("flags");
  QTest::addColumn<qlonglong>("peak0");
  QTest::addColumn<qlonglong>("peak1");
  // Numbers printed by `pipescope simulate --profile profiles/gpt-tiny-cpu.json -K 2 -M 4
  // --microbatch-size 2 --json FLAGS`, stages[].peak_memory_bytes; equal to the CPU
  // executor's tracked peaks (docs/memory.md).
  QTest::newRow("1f1b") << int(ScheduleKind::OneFOneB) << 1 << "--schedule 1f1b" << 11661312LL << 9698304LL;
  QTest::newRow("gpipe") << int(ScheduleKind::GPipe) << 1 << "--schedule gpipe" << 16388096LL << 17381376LL;
  QTest::newRow("zb-h1") << int(ScheduleKind::ZeroBubbleH1) << 1 << "--schedule zb-h1" << 12644352LL << 14880768LL;
  QTest::newRow("interleaved v=2") << int(ScheduleKind::Interleaved) << 2 << "--schedule interleaved --chunks 2"
                                   << 12843008LL << 10880000LL;
  // The asynchronous ones over the GUI's three steps: 1F1B's peaks plus the extra weight
  // versions (pipedream: K - s - 1 copies of the stage's 1586176 / 1653248 parameter
  // bytes; 2bw: one copy on every stage), drawn on the static band.
  QTest::newRow("pipedream") << int(ScheduleKind::PipeDream) << 1 << "--schedule pipedream --steps 3"
                             << 13247488LL << 9698304LL;
  QTest::newRow("2bw") << int(ScheduleKind::PipeDream2BW) << 1 << "--schedule 2bw --steps 3" << 13247488LL
                       << 11351552LL;
}

void MemoryTest::drawn_peak_equals_simulate_json() {
  QFETCH(int, kind);
  QFETCH(int, chunks);
  QFETCH(QString, flags);
  QFETCH(qlonglong, peak0);
  QFETCH(qlonglong, peak1);
  const StepReport r = evaluate(tiny_inputs(static_cast<ScheduleKind>(kind), chunks)).report;
  const MemoryCurves c = memory_curves(r);
  const std::vector<int64_t> cli = cli_peaks(flags.toStdString());
  QCOMPARE(c.stages.size(), std::size_t{2});
  QCOMPARE(cli.size(), std::size_t{2});
  const std::array<qlonglong, 2> stated = {peak0, peak1};
  for (int s = 0; s < 2; ++s) {
    const StageMemoryCurve& curve = c.stages[s];
    QCOMPARE(drawn_peak(curve), cli[s]);
    QCOMPARE(curve.peak_bytes, cli[s]);
    QCOMPARE(drawn_peak(curve), stated[s]);
    // The profile has workspace_bytes: every op holds its input and workspace, so every
    // schedule's series has transients, and the peak is more than static + stash.
    QVERIFY(curve.peak_transient_bytes() > 0);
    QCOMPARE(curve.transient_bytes, r.positions[s].transient_bytes);
    QVERIFY(curve.transient_bytes > 0);
    // Nothing is held once the step is over.
    QCOMPARE(curve.steps.back(), (MemoryStep{curve.steps.back().time_ns, 0, 0}));
  }
}

void MemoryTest::zb_h1_holds_output_gradients_from_i_to_w() {
  // Split backward keeps each linear's output gradient from I to its W: after every I
  // the first stage (layers 0-3: two attention and two MLP blocks) holds the profile's
  // held_for_weight at batch 2, 2 x (327,680 + 393,216) = 1,441,792 bytes, as
  // transients. 1F1B's first stage holds nothing beyond the stash after its B.
  const StepReport zb = evaluate(tiny_inputs(ScheduleKind::ZeroBubbleH1)).report;
  const StepReport one = evaluate(tiny_inputs(ScheduleKind::OneFOneB)).report;
  const Profile profile = load_profile(kTinyProfile);
  QCOMPARE(zb.positions[0].layers, (std::vector<std::pair<int, int>>{{0, 4}}));
  double held_for_weight = 0;
  for (int l = 0; l < 4; ++l) held_for_weight += profile.layers[l].workspace.held_for_weight[1];  // batch_sizes[1] = 2
  QCOMPARE(held_for_weight, 1441792.0);
  QCOMPARE(held_after(zb, 0, "backward_input"), 1441792LL);
  QCOMPARE(held_after(one, 0, "backward"), 0LL);
  // The peaks' transient parts (simulate --json, stages[].transient_bytes): 1F1B holds
  // 589,824 on each stage at its peak, zb-h1 1,572,864 and 3,276,800.
  const MemoryCurves zc = memory_curves(zb), oc = memory_curves(one);
  QCOMPARE(oc.stages[0].transient_bytes, 589824LL);
  QCOMPARE(oc.stages[1].transient_bytes, 589824LL);
  QCOMPARE(zc.stages[0].transient_bytes, 1572864LL);
  QCOMPARE(zc.stages[1].transient_bytes, 3276800LL);
}

void MemoryTest::activation_band_drops_at_i_and_holds_w() {
  // weight_grad_bytes a quarter of each layer's stash: I frees 3/4 of a micro-batch's
  // stash, W the rest (core/op_rules.h). The chart's activation band then peaks where
  // the order alone says (peak_stash_bytes: F adds the stash, I frees 3/4, W 1/4), below
  // the same zb-h1 plan without weight_grad_bytes, and between I and W it holds W's
  // quarters: some moment holds a stash count that is not whole.
  auto profile = std::make_shared<Profile>(*uniform_profile(4));
  for (LayerProfile& l : profile->layers) l.weight_grad_bytes = {262144.0};
  PlanInputs in;
  in.profile = profile;
  in.hardware = nvlink_hardware(2);
  in.choice.stages = 2;
  in.choice.microbatches = 8;
  in.choice.partition = PartitionKind::Uniform;
  in.choice.schedule = ScheduleKind::ZeroBubbleH1;
  const Evaluation e = evaluate(in);
  const MemoryCurves c = memory_curves(e.report);
  const std::vector<int64_t> expected = peak_stash_bytes(e.schedule, e.costs);
  const int64_t stash = 2 * 1048576;  // two layers a stage
  bool held_quarters = false;
  for (int d = 0; d < 2; ++d) {
    int64_t most = 0;
    for (const MemoryStep& s : c.stages[d].steps) {
      most = std::max(most, s.activation_bytes);
      held_quarters |= s.activation_bytes % stash != 0;
    }
    QCOMPARE(most, expected[d]);
  }
  QVERIFY(held_quarters);
  in.profile = uniform_profile(4);  // no weight_grad_bytes: the stash lives until W
  const MemoryCurves whole = memory_curves(evaluate(in).report);
  bool higher = false;  // device 0 peaks before its first I either way; device 1 holds whole stashes to W
  for (int d = 0; d < 2; ++d) {
    int64_t whole_most = 0;
    for (const MemoryStep& s : whole.stages[d].steps) whole_most = std::max(whole_most, s.activation_bytes);
    QVERIFY(whole_most >= expected[d]);
    higher |= whole_most > expected[d];
  }
  QVERIFY(higher);
}

void MemoryTest::no_transients_without_workspace_bytes() {
  // A GPU profile without workspace_bytes: the prediction counts static + stash only
  // (its notes say so), so the transient series is zero and the peak is static + stash.
  PlanInputs in;
  in.profile = std::make_shared<const Profile>(load_profile(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-1.3b-h200.json"));
  in.choice.stages = 4;
  in.choice.microbatches = 8;
  in.choice.schedule = ScheduleKind::ZeroBubbleH1;
  const StepReport r = evaluate(in).report;
  const MemoryCurves c = memory_curves(r);
  QVERIFY(!c.has_transients());
  for (const StageMemoryCurve& s : c.stages) {
    QCOMPARE(s.peak_transient_bytes(), 0LL);
    QCOMPARE(drawn_peak(s), s.static_bytes + r.positions[s.stage].peak_activation_bytes);
    QCOMPARE(drawn_peak(s), s.peak_bytes);
  }
}

void MemoryTest::chrome_trace_keeps_transients() {
  const StepReport r = evaluate(tiny_inputs(ScheduleKind::ZeroBubbleH1)).report;
  const Timeline t = chrome_trace_to_timeline(chrome_trace(r), "trace.json");
  QCOMPARE(t.memory.size(), r.timeline.memory.size());
  int64_t most = 0;
  for (std::size_t i = 0; i < t.memory.size(); ++i) {
    QCOMPARE(t.memory[i].activation_bytes, r.timeline.memory[i].activation_bytes);
    QCOMPARE(t.memory[i].transient_bytes, r.timeline.memory[i].transient_bytes);
    most = std::max(most, t.memory[i].transient_bytes);
  }
  QVERIFY(most > 0);
}

void MemoryTest::view_draws_transients_in_their_own_colour() {
  MemoryView v;
  v.resize(1000, 320);
  v.set_curves(memory_curves(evaluate(tiny_inputs(ScheduleKind::ZeroBubbleH1)).report));
  QImage image = v.grab().toImage();
  for (int s = 0; s < 2; ++s) {
    const int n = count_pixels(image, v.stage_rect(s), transient_color());
    qInfo("stage %d: %d pixels of transients", s, n);
    QVERIFY(n > 0);
  }
  PlanInputs in;
  in.profile = std::make_shared<const Profile>(load_profile(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-1.3b-h200.json"));
  in.choice.stages = 2;
  in.choice.microbatches = 4;
  in.choice.schedule = ScheduleKind::ZeroBubbleH1;
  v.set_curves(memory_curves(evaluate(in).report));
  image = v.grab().toImage();
  for (int s = 0; s < 2; ++s) QCOMPARE(count_pixels(image, v.stage_rect(s), transient_color()), 0);
}

void MemoryTest::host_curve_holds_what_the_offload_sent() {
  // gpt-tiny-cpu, 1F1B, K = 2, M = 4, every stash offloaded over a 1 GB/s host link: the
  // chart's host curve of each stage peaks at the prediction's host_peak_bytes, starts and
  // ends at 0 (every stash is reloaded by its B), and the legend gets the host's entry.
  const Evaluation e = evaluate(tiny_inputs(ScheduleKind::OneFOneB));
  Hardware h = Hardware::ideal(2);
  h.host_link = HostLink{{1.0, 0}, {1.0, 0}};
  SimOptions o;
  o.offload = {OffloadPolicy::All, {}};
  const StepReport r = simulate(e.schedule, e.costs, h, o);
  const MemoryCurves c = memory_curves(r);
  QVERIFY(c.has_host());
  QVERIFY(!memory_curves(e.report).has_host());
  for (const StageMemoryCurve& s : c.stages) {
    QVERIFY(r.positions[s.stage].host_peak_bytes > 0);
    int64_t most = 0;
    for (const HostStep& step : s.host) most = std::max(most, step.host_bytes);
    QCOMPARE(most, r.positions[s.stage].host_peak_bytes);
    QCOMPARE(s.host_peak_bytes, most);
    QCOMPARE(s.host.front().host_bytes, 0LL);
    QCOMPARE(s.host.back().host_bytes, 0LL);
  }
  MemoryView v;
  v.resize(1000, 320);
  v.set_curves(c);
  QVERIFY(!v.grab().toImage().isNull());
}

QTEST_MAIN(MemoryTest)
#include "memory_test.moc"
