// The LLM plans model without widgets: its rows are the search's best in order; each
// filter keeps exactly the rows with that value (counted independently here); colours
// follow the value's place in the values the result spans, so equal values share a
// colour and the smallest / largest take the ramp's ends. Runs under
// QAbstractItemModelTester. The axes and the description of a file read from disk.
#include <QAbstractItemModelTester>
#include <QtTest>
#include <memory>
#include <string>

#include "gui/models/llm_plans_model.h"
#include "gui/models/palette.h"
#include "llm/layout_search.h"

using namespace pipescope;
using namespace pipescope::gui;

namespace {

std::shared_ptr<const LlmSearchResult> small_search() {
  LlmSearchRequest q;
  TransformerShape& s = q.shape;
  s.layers = 8, s.hidden = 1024, s.heads = 16, s.kv_heads = 4, s.ffn_hidden = 4096, s.swiglu = true;
  s.bias_linear = false, s.rms_norm = true, s.tied_embeddings = false, s.vocabulary = 32000, s.sequence = 2048;
  s.experts = 4, s.moe_topk = 2;
  q.gpus = 16, q.global_batch = 64, q.top = 200;
  const GpuModel gpu = load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/h100-sxm.json");
  return std::make_shared<const LlmSearchResult>(search_layouts(q, gpu));
}

}  // namespace

class LlmPlansModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void rows_are_the_best_in_order_and_filters_keep_exactly_their_value() {
    const auto result = small_search();
    LlmPlansModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.set_result(result);
    QCOMPARE(static_cast<std::size_t>(m.rowCount()), result->best.size());
    QVERIFY(result->best.size() > 20);
    for (int row = 1; row < m.rowCount(); ++row) {
      QVERIFY(m.data(m.index(row - 1, LlmPlansModel::StepMs)).toDouble() <=
              m.data(m.index(row, LlmPlansModel::StepMs)).toDouble());
    }
    for (LlmDimension dim : {LlmDimension::T, LlmDimension::D, LlmDimension::Cp, LlmDimension::Ep, LlmDimension::Sharding}) {
      const std::vector<int> values = m.values(dim);
      QVERIFY(std::is_sorted(values.begin(), values.end()));
      for (int value : values) {
        m.set_filter(dim, value);
        int expected = 0;
        for (const LlmCandidate& c : result->best) expected += dimension_value(c.layout, dim) == value ? 1 : 0;
        QCOMPARE(m.rowCount(), expected);
        for (int row = 0; row < m.rowCount(); ++row) QCOMPARE(dimension_value(m.candidate(row).layout, dim), value);
      }
      m.set_filter(dim, -1);
      QCOMPARE(static_cast<std::size_t>(m.rowCount()), result->best.size());
    }
    // Two filters at once: the intersection.
    m.set_filter(LlmDimension::T, 1);
    m.set_filter(LlmDimension::Ep, 4);
    int both = 0;
    for (const LlmCandidate& c : result->best) both += c.layout.t == 1 && c.layout.ep == 4 ? 1 : 0;
    QCOMPARE(m.rowCount(), both);
    m.clear_filters();
    QCOMPARE(static_cast<std::size_t>(m.rowCount()), result->best.size());
  }

  void colours_follow_the_value() {
    LlmPlansModel m;
    m.set_result(small_search());
    for (LlmDimension dim : {LlmDimension::T, LlmDimension::Ep, LlmDimension::Sharding}) {
      m.set_colour_by(dim);
      const std::vector<int> values = m.values(dim);
      QVERIFY(values.size() >= 2);
      for (int row = 0; row < m.rowCount(); ++row) {
        const int value = dimension_value(m.candidate(row).layout, dim);
        const QColor c = m.colour(row);
        QCOMPARE(m.data(m.index(row, LlmPlansModel::Layout), Qt::DecorationRole).value<QColor>(), c);
        if (value == values.front()) QCOMPARE(c, ramp_color(0.0));
        if (value == values.back()) QCOMPARE(c, ramp_color(1.0));
      }
    }
    QCOMPARE(dimension_value_name(LlmDimension::Sharding, static_cast<int>(Sharding::DistributedOptimizer)),
             QString("distributed-optimizer"));
    QCOMPARE(to_qstring(LlmDimension::Cp), QString("cp"));
  }

  // The committed llm-plan result (tests/data/llm_plan/README.md): 40 layouts, the peak
  // from 31.56 to 78.91 GB against 80 GB, steps from 1501.054612 to 1620.199397 ms.
  void a_file_gives_axes_over_every_layout_and_a_description() {
    const auto file = std::make_shared<const LlmPlanFile>(
        read_llm_plan_result(PIPESCOPE_SOURCE_DIR "/tests/data/llm_plan/moe-32gpus-top40.json"));
    LlmPlansModel m;
    m.set_result(std::shared_ptr<const LlmSearchResult>(file, &file->result));
    QCOMPARE(m.rowCount(), 40);
    m.set_filter(LlmDimension::T, 2);  // best[3] is the first of the 10 layouts with t = 2
    QCOMPARE(m.rowCount(), 10);
    QCOMPARE(m.row_of_candidate(3), 0);
    QCOMPARE(m.row_of_candidate(0), -1);
    // 1.1 x the largest peak (86.80 GB) is above 1.02 x 80 GB: the capacity is inside the axis.
    const MemoryAxis axis = m.memory_axis();  // the same with the filter on
    QCOMPARE(axis.top, 1.1 * 78905124352.0);
    QVERIFY(axis.capacity_inside);
    QCOMPARE(m.min_step_ns(), int64_t{1501054612});
    QCOMPARE(m.max_step_ns(), int64_t{1620199397});
    m.set_colour_by(LlmDimension::Sharding);
    QCOMPARE(m.value_colour(static_cast<int>(Sharding::None)), ramp_color(0.0));
    QCOMPARE(m.value_colour(static_cast<int>(Sharding::DistributedOptimizer)), ramp_color(1.0));
    const QString text = llm_plan_description(*file);
    QVERIFY2(text.startsWith("megatron-flags on 32 x h100-sxm (80.0 GB each), global batch 128, megatron: the 40 "
                             "fastest layouts that fit\nsearched: 56 (t, cp, d, p) factorizations, 14466 layouts, "
                             "14454 valid, 11414 fit in memory, 449 simulated\nwhy:\n  t = 1: "),
             qPrintable(text));
    QCOMPARE(text.count("\n  "), 11);  // the file's 11 why lines (one per dimension, the schedule after v)
  }
};

QTEST_APPLESS_MAIN(LlmPlansModelsTest)
#include "llm_plans_models_test.moc"
