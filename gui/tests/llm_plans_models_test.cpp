// The one plans model (plans_model.h) over llm-plan's layouts (llm_plan_set.h), without
// widgets: its rows are the search's best in order; each filter keeps exactly the rows with
// that value (counted independently here); colours follow the value's place in the values
// the result spans, so equal values share a colour and the smallest / largest take the
// ramp's ends. Runs under QAbstractItemModelTester. The axes, the points (the file's own
// numbers, in GB as llm-plan quotes them) and the description of a file read from disk; a
// dimension the layouts lack (the planner's "schedule", "K") is refused, naming those they have.
#include <QAbstractItemModelTester>
#include <QtTest>
#include <memory>
#include <string>

#include "core/error.h"
#include "gui/models/llm_plan_set.h"
#include "gui/models/palette.h"
#include "llm/layout_search.h"
#include "tests/support/source_paths.h"

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

// The layout's value of one of the dimensions the adapter names, read here from the layout.
int layout_value(const ParallelLayout& l, const QString& dim) {
  if (dim == "t") return l.t;
  if (dim == "d") return l.d;
  if (dim == "cp") return l.cp;
  if (dim == "ep") return l.ep;
  return static_cast<int>(l.sharding);
}

}  // namespace

class LlmPlansModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void rows_are_the_best_in_order_and_filters_keep_exactly_their_value() {
    const auto result = small_search();
    PlansModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.set_plans(plan_set_of(*result));
    QCOMPARE(static_cast<std::size_t>(m.rowCount()), result->best.size());
    QVERIFY(result->best.size() > 20);
    for (int row = 1; row < m.rowCount(); ++row) {
      QVERIFY(m.data(m.index(row - 1, PlansModel::StepMs)).toDouble() <=
              m.data(m.index(row, PlansModel::StepMs)).toDouble());
    }
    for (const QString dim : {"t", "d", "cp", "ep", "sharding"}) {
      const std::vector<int> values = m.values(dim);
      QVERIFY(std::is_sorted(values.begin(), values.end()));
      for (int value : values) {
        m.set_filter(dim, value);
        int expected = 0;
        for (const LlmCandidate& c : result->best) expected += layout_value(c.layout, dim) == value ? 1 : 0;
        QCOMPARE(m.rowCount(), expected);
        for (int row = 0; row < m.rowCount(); ++row) QCOMPARE(layout_value(result->best[m.entry(row)].layout, dim), value);
      }
      m.set_filter(dim, -1);
      QCOMPARE(static_cast<std::size_t>(m.rowCount()), result->best.size());
    }
    // Two filters at once: the intersection.
    m.set_filter("t", 1);
    m.set_filter("ep", 4);
    int both = 0;
    for (const LlmCandidate& c : result->best) both += c.layout.t == 1 && c.layout.ep == 4 ? 1 : 0;
    QCOMPARE(m.rowCount(), both);
    m.clear_filters();
    QCOMPARE(static_cast<std::size_t>(m.rowCount()), result->best.size());
  }

  void colours_follow_the_value() {
    const auto result = small_search();
    PlansModel m;
    m.set_plans(plan_set_of(*result));
    for (const QString dim : {"t", "ep", "sharding"}) {
      m.set_colour_by(dim);
      const std::vector<int> values = m.values(dim);
      QVERIFY(values.size() >= 2);
      for (int row = 0; row < m.rowCount(); ++row) {
        const int value = layout_value(result->best[m.entry(row)].layout, dim);
        QCOMPARE(m.value(row, dim), value);
        const QColor c = m.colour(row);
        QCOMPARE(m.data(m.index(row, PlansModel::Label), Qt::DecorationRole).value<QColor>(), c);
        if (value == values.front()) QCOMPARE(c, ramp_color(0.0));
        if (value == values.back()) QCOMPARE(c, ramp_color(1.0));
      }
    }
    m.set_filter("sharding", static_cast<int>(Sharding::DistributedOptimizer));
    QVERIFY(m.rowCount() > 0);
    QCOMPARE(m.value_name(0, "sharding"), QString("distributed-optimizer"));
  }

  // The committed llm-plan result (tests/data/llm_plan/README.md): 40 layouts, the peak
  // from 31.56 to 78.91 GB against 80 GB, steps from 1501.054612 to 1620.199397 ms.
  void a_file_gives_axes_over_every_layout_and_a_description() {
    const auto file = std::make_shared<const LlmPlanFile>(
        read_llm_plan_result(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/llm_plan/moe-32gpus-top40.json"));
    PlansModel m;
    m.set_plans(plan_set_of(file->result));
    QCOMPARE(m.rowCount(), 40);
    m.set_filter("t", 2);  // best[3] is the first of the 10 layouts with t = 2
    QCOMPARE(m.rowCount(), 10);
    QCOMPARE(m.row_of(3), 0);
    QCOMPARE(m.row_of(0), -1);
    // 1.1 x the largest peak (86.80 GB) is above 1.02 x 80 GB: the capacity is inside the axis.
    const MemoryAxis axis = m.memory_axis();  // the same with the filter on
    QCOMPARE(axis.top, 1.1 * 78905124352.0);
    QVERIFY(axis.capacity_inside);
    QCOMPARE(m.min_step_ns(), int64_t{1501054612});
    QCOMPARE(m.max_step_ns(), int64_t{1620199397});
    m.set_colour_by("sharding");
    QCOMPARE(m.value_colour(static_cast<int>(Sharding::None)), ramp_color(0.0));
    QCOMPARE(m.value_colour(static_cast<int>(Sharding::DistributedOptimizer)), ramp_color(1.0));
    const QString text = llm_plan_description(*file);
    QVERIFY2(text.startsWith("megatron-flags on 32 x h100-sxm (80.0 GB each), global batch 128, megatron: the 40 "
                             "fastest layouts that fit\nsearched: 56 (t, cp, d, p) factorizations, 14466 layouts, "
                             "14454 valid, 11414 fit in memory, 449 simulated\nwhy:\n  t = 1: "),
             qPrintable(text));
    QCOMPARE(text.count("\n  "), 11);  // the file's 11 why lines (one per dimension, the schedule after v)
  }

  // The points are the file's own numbers, as the former LLM plans model drew them (its
  // peak bytes / 10^9 across, its step down, then in s, now in ms): best[0] at
  // 61993690624 B = 61.99 GB and 1501.054612 ms, best[39] at 35662905344 B and
  // 1620.199397 ms (tests/data/llm_plan/moe-32gpus-top40.json); every layout fits and none
  // is on a front (best is the fastest 40, not a front).
  void points_are_the_files_numbers_in_gb() {
    const LlmPlanFile file = read_llm_plan_result(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/llm_plan/moe-32gpus-top40.json");
    PlansModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.set_plans(plan_set_of(file.result));
    QCOMPARE(m.plans()->unit.name, QString("GB"));
    QCOMPARE(m.plans()->unit.bytes, 1e9);
    QCOMPARE(m.plans()->capacity_bytes, int64_t{80000000000});
    QCOMPARE(m.rowCount(), 40);
    for (int row = 0; row < m.rowCount(); ++row) {
      const LlmCandidate& c = file.result.best[static_cast<std::size_t>(row)];
      QCOMPARE(m.at(row).point.step_ns, c.step_ns);
      QCOMPARE(static_cast<double>(m.at(row).point.peak_bytes), c.peak_bytes);
      QVERIFY(m.at(row).fits && !m.at(row).pareto && !m.at(row).offload);
    }
    QCOMPARE(m.at(0).point.step_ns, int64_t{1501054612});
    QCOMPARE(m.at(0).point.peak_bytes, int64_t{61993690624});
    QCOMPARE(m.at(39).point.step_ns, int64_t{1620199397});
    QCOMPARE(m.at(39).point.peak_bytes, int64_t{35662905344});
    QCOMPARE(m.data(m.index(0, PlansModel::StepMs)).toString(), QString("1501.055"));
    QCOMPARE(m.data(m.index(0, PlansModel::Peak)).toString(), QString("61.99"));
    QCOMPARE(m.headerData(PlansModel::Peak, Qt::Horizontal).toString(), QString("Peak GB"));
    QCOMPARE(m.fitting(), 40);
    QVERIFY(m.front().empty());
  }

  // The layouts have t, d, cp, ep and sharding; a filter or a colour over a dimension only
  // the planner's candidates have is refused, naming the ones they have, and changes
  // nothing. A filter a new set has too stays on.
  void a_dimension_the_layouts_lack_is_refused() {
    const LlmPlanFile file = read_llm_plan_result(std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/llm_plan/moe-32gpus-top40.json");
    PlansModel m;
    m.set_plans(plan_set_of(file.result));
    try {
      m.set_filter("schedule", 1);
      QFAIL("a schedule filter over llm-plan's layouts was accepted");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("plans: \"llm-plan's layouts\" has no dimension \"schedule\" (its dimensions: "
                                          "t, d, cp, ep, sharding)"),
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(InputError, m.set_colour_by("K"));
    QVERIFY_THROWS_EXCEPTION(InputError, m.values("recompute"));
    QCOMPARE(m.rowCount(), 40);
    QCOMPARE(m.colour_by(), QString("t"));  // the first dimension, the default
    m.set_filter("t", 2);
    m.set_plans(plan_set_of(file.result));
    QCOMPARE(m.rowCount(), 10);
    QCOMPARE(m.filter("t"), 2);
  }
};

QTEST_APPLESS_MAIN(LlmPlansModelsTest)
#include "llm_plans_models_test.moc"
