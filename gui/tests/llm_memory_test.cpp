// The memory split per GPU of each pipeline rank, for a plan that carries an LLM layout:
// LlmMemoryModel's rows are llm/memory.h's numbers (the reference computed here again),
// in the closed-form ratios of Megatron's bf16 mixed precision (2 bytes of weights, 4 of
// fp32 gradients, 12 of optimizer state per parameter, the latter / d under the
// distributed optimizer), the model passes QAbstractItemModelTester, a plan without a
// layout has no rows and says why, and the view draws rank 0's bar with parameters at the
// bottom and activations on top, offscreen. (The main window's part:
// llm_memory_window_test.cpp.)
#include <QAbstractItemModelTester>
#include <QImage>
#include <QtTest>

#include "core/profile.h"
#include "gui/app/llm_memory_view.h"
#include "gui/models/llm_memory_model.h"
#include "llm/profile_layers.h"
#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm/plan_layout.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using namespace pipescope::gui;

namespace {

const std::string kProfile = std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-1.3b-h200.json";  // embedding, 24 blocks, head

// p = 2 positions of d = 2 replicas, 12 + 12 blocks, t 2 with SP, distributed optimizer,
// selective recompute, 8 micro-batches of 1.
ParallelLayout layout() {
  ParallelLayout l;
  l.t = 2, l.sequence_parallel = true, l.d = 2, l.p = 2;
  l.sharding = Sharding::DistributedOptimizer, l.recompute = Recompute::Selective;
  l.micro_batch = 1, l.microbatches = 8;
  return l;
}

Plan plan_with_layout(bool with_layout) {
  Plan p;
  p.profile = "gpt-1.3b-h200.json";
  p.schedule = ScheduleKind::OneFOneB;
  p.microbatches = 8;
  p.batch_size = 16;
  p.stages = {{0, 13, {0, 1}}, {13, 26, {2, 3}}};
  if (with_layout) p.layout = layout_to_json(layout());
  return p;
}

}  // namespace

class LlmMemoryTest : public QObject {
  Q_OBJECT
 private slots:
  void rowsAreLlmMemorysNumbers() {
    const Profile profile = load_profile(kProfile);
    LlmMemoryModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
    m.set_plan(profile, plan_with_layout(true), 141'000'000'000);
    QCOMPARE(m.rowCount(), 2);
    QCOMPARE(m.columnCount(), int(LlmMemoryModel::ColumnCount));
    // The reference: the same shape and layout through llm/memory.h directly.
    const TransformerShape shape = *transformer_shape_of(profile, 2);
    QCOMPARE(shape.layers, 24);
    QCOMPARE(shape.vocabulary, 50432);  // 50257 padded to a multiple of 128 x t = 256
    const LlmMemory ref = llm_memory(shape, validate_layout(shape, layout(), 8));
    for (int r = 0; r < 2; ++r) {
      const LlmMemoryBar& b = m.bars()[r];
      const RankMemory& s = ref.stages[r];
      QCOMPARE(b.rank, r);
      QCOMPARE(b.parts[0], s.parameter_bytes);
      QCOMPARE(b.parts[3], s.activation_bytes);
      QCOMPARE(b.total(), s.total());
      QCOMPARE(m.index(r, LlmMemoryModel::Total).data(LlmMemoryModel::RawRole).toDouble(), s.total());
      // bf16 mixed: 4 bytes of gradient per 2 of weight; 12 / d = 6 of optimizer state.
      QCOMPARE(b.parts[1], 2 * b.parts[0]);
      QCOMPARE(b.parts[2], 3 * b.parts[0]);
      QVERIFY(m.index(r, LlmMemoryModel::Total).data(LlmMemoryModel::FitsRole).toBool());
    }
    QVERIFY(m.bars()[0].parts[0] > 0 && m.bars()[0].parts[3] > 0);
    m.set_plan(profile, plan_with_layout(true), 1'000'000);  // 1 MB: nothing fits
    QVERIFY(!m.index(0, 0).data(LlmMemoryModel::FitsRole).toBool());
    QVERIFY(m.capacity_on_scale());  // 1 MB is below the bars: the axis reaches the highest bar
    QCOMPARE(m.max_bytes(), std::max(m.bars()[0].total(), m.bars()[1].total()));
  }

  void aPlanWithoutALayoutHasNoRows() {
    LlmMemoryModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
    m.set_plan(load_profile(kProfile), plan_with_layout(false), 0);
    QCOMPARE(m.rowCount(), 0);
    QVERIFY(m.message().contains("no layout"));
    Plan bad = plan_with_layout(true);
    ParallelLayout l = layout();
    l.t = 3;  // 16 heads: Megatron refuses t = 3
    bad.layout = layout_to_json(l);
    m.set_plan(load_profile(kProfile), bad, 0);
    QCOMPARE(m.rowCount(), 0);
    QVERIFY2(m.message().contains("--tensor-model-parallel-size"), qPrintable(m.message()));
  }

  void viewStacksThePartsBottomToTop() {
    LlmMemoryModel m;
    m.set_plan(load_profile(kProfile), plan_with_layout(true), 141'000'000'000);  // far above: off the chart
    QVERIFY(!m.capacity_on_scale());
    LlmMemoryView view;
    view.set_model(&m);
    view.resize(600, 300);
    const QImage img = view.grab().toImage();
    const QRect bar = view.bar_rect(0);
    QVERIFY(bar.height() > 20);
    const int x = bar.center().x();
    QCOMPARE(img.pixelColor(x, bar.bottom() - 2), LlmMemoryView::part_color(0));  // parameters at the bottom
    QCOMPARE(img.pixelColor(x, bar.top() + 2), LlmMemoryView::part_color(3));     // activations on top
    // Heights follow the totals: rank 0 (embedding) against rank 1 (head).
    const double ratio = m.bars()[0].total() / m.bars()[1].total();
    QVERIFY(std::abs(static_cast<double>(view.bar_rect(0).height()) / view.bar_rect(1).height() - ratio) < 0.05);
  }
};

QTEST_MAIN(LlmMemoryTest)
#include "llm_memory_test.moc"
