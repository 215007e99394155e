// The LLM plans model without widgets: its rows are the search's best in order; each
// filter keeps exactly the rows with that value (counted independently here); colours
// follow the value's place in the values the result spans, so equal values share a
// colour and the smallest / largest take the ramp's ends. Runs under
// QAbstractItemModelTester.
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
};

QTEST_APPLESS_MAIN(LlmPlansModelsTest)
#include "llm_plans_models_test.moc"
