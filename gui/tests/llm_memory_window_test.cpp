// `pipescope-gui --plan FILE` shows a plan file; when it carries an LLM layout the memory
// split per GPU of each pipeline rank is computed (2 ranks for this plan) and its chart
// shown, and hidden for the same plan without a layout; a missing file names itself in
// the status line.
#include <QTemporaryDir>
#include <QtTest>

#include "gui/app/app_options.h"
#include "gui/app/llm_memory_view.h"
#include "gui/app/main_window.h"
#include "llm/plan_layout.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using namespace pipescope::gui;

namespace {

const std::string kProfile = std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-1.3b-h200.json";

// p = 2 positions of d = 2 replicas, t 2 with SP, the distributed optimizer.
Plan plan_with_layout(bool with_layout) {
  Plan p;
  p.profile = kProfile;
  p.schedule = ScheduleKind::OneFOneB;
  p.microbatches = 8;
  p.batch_size = 16;
  p.stages = {{0, 13, {0, 1}}, {13, 26, {2, 3}}};
  if (with_layout) {
    ParallelLayout l;
    l.t = 2, l.sequence_parallel = true, l.d = 2, l.p = 2, l.sharding = Sharding::DistributedOptimizer;
    l.micro_batch = 1, l.microbatches = 8;
    p.layout = layout_to_json(l);
  }
  return p;
}

}  // namespace

class LlmMemoryWindowTest : public QObject {
  Q_OBJECT
 private slots:
  void mainWindowShowsAPlanFilesLayout() {
    QTemporaryDir dir;
    for (bool with_layout : {true, false}) {
      const Plan plan = plan_with_layout(with_layout);
      const QString path = dir.filePath(with_layout ? "layout.json" : "plain.json");
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray::fromStdString(plan_to_json(plan).dump()));
      f.close();
      MainWindow w(parse_app_options({"pipescope-gui", "--plan", path}));
      w.wait_for_plan();
      QCoreApplication::processEvents();
      QVERIFY(w.evaluation());
      QCOMPARE(w.evaluation()->plan.layout.has_value(), with_layout);
      QCOMPARE(w.llm_memory().rowCount(), with_layout ? 2 : 0);
      QCOMPARE(w.llm_memory_view()->isHidden(), !with_layout);
    }
    MainWindow w(parse_app_options({"pipescope-gui", "--plan", dir.filePath("missing.json")}));
    QVERIFY2(w.status_text().contains("missing.json"), qPrintable(w.status_text()));
  }
};

QTEST_MAIN(LlmMemoryWindowTest)
#include "llm_memory_window_test.moc"
