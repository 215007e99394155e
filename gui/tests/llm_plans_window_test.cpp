// `pipescope-gui --llm-plan FILE`: the llm-plans tab (the one plans view, plans_view.h)
// opens on the committed llm-plan result
// (tests/data/llm_plan/README.md: 40 layouts; t = 2 in 10 of them, best[3, 5, 16, 19, 24,
// 29, 30, 31, 37, 38]; 5 without sharding, 35 with the distributed optimizer; 80 GB
// H100s). Filtering t = 2 draws exactly those 10 points; colouring by sharding draws each
// point in its model colour (the ramp's two ends here); a click on a point selects its
// table row and a row rings its point; a bad file (--llm-plan or --plan) exits 2 naming
// file and field; the
// command line and --screenshot of the tab.
#include <QComboBox>
#include <QItemSelectionModel>
#include <QProcess>
#include <QTableView>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <set>

#include "core/error.h"
#include "gui/app/app_options.h"
#include "gui/app/plans_view.h"
#include "gui/app/main_window.h"
#include "gui/models/palette.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using namespace pipescope::gui;

namespace {

const QString kFixture = QString(PIPESCOPE_SOURCE_DIR) + "/tests/data/llm_plan/moe-32gpus-top40.json";

void choose(QComboBox* box, const QVariant& value) {
  QVERIFY(box);
  const int at = box->findData(value);
  QVERIFY2(at >= 0, qPrintable(box->itemText(0)));
  box->setCurrentIndex(at);
}

int count_colour(const QImage& image, const QColor& c) {
  int n = 0;
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) n += image.pixelColor(x, y) == c ? 1 : 0;
  }
  return n;
}

}  // namespace

class LlmPlansWindowTest : public QObject {
  Q_OBJECT
 private slots:
  void command_line() {
    AppOptions o = parse_app_options({"pipescope-gui", "--llm-plan", "r.json"});
    QCOMPARE(o.llm_plan_path, QString("r.json"));
    QCOMPARE(o.tab, QString("llm-plans"));  // --llm-plan alone opens its tab
    QCOMPARE(parse_app_options({"pipescope-gui", "--llm-plan", "r.json", "--tab", "sweep"}).tab, QString("sweep"));
    QCOMPARE(parse_app_options({"pipescope-gui", "--tab", "llm-plans"}).tab, QString("llm-plans"));
    QCOMPARE(parse_app_options({"pipescope-gui"}).tab, QString("timeline"));
    try {
      parse_app_options({"pipescope-gui", "--tab", "llm"});
      QFAIL("--tab llm accepted");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("distribution or llm-plans, got \"llm\""), e.what());
    }
    const QString help = parse_app_options({"pipescope-gui", "--help"}).help_text;
    QVERIFY(help.contains("--llm-plan <FILE>"));
    QVERIFY(help.simplified().contains("unless --top says more (e.g. --top 50)"));
  }

  void filter_colour_and_click() {
    MainWindow w(parse_app_options({"pipescope-gui", "--llm-plan", kFixture, "--size", "1400x900"}));
    w.show();
    w.wait_for_plan();
    QCoreApplication::processEvents();
    PlansView* v = w.llm_plans_view();
    QCOMPARE(w.findChild<QTabWidget*>()->currentWidget(), v);
    QVERIFY(w.startup_error().isEmpty());
    QCOMPARE(w.llm_plans().rowCount(), 40);
    QVERIFY2(v->description().contains("14466 layouts, 14454 valid, 11414 fit in memory, 449 simulated"),
             qPrintable(v->description()));
    QVERIFY(v->description().contains("\n  t = 1: no tensor-parallel traffic"));
    PlansScatter* s = v->scatter();
    s->grab();
    QCOMPARE(static_cast<int>(s->drawn().size()), 40);
    // One box per dimension of the layouts, none for the planner's schedule or K.
    for (const char* d : {"t", "d", "cp", "ep", "sharding"}) QVERIFY2(v->filter(d), d);
    QVERIFY(!v->filter("schedule") && !v->filter("K"));

    choose(v->filter("t"), 2);
    QCOMPARE(w.llm_plans().rowCount(), 10);
    s->grab();
    std::set<int> drawn;
    for (const PlansScatter::DrawnPoint& p : s->drawn()) drawn.insert(p.entry);
    QCOMPARE(drawn, (std::set<int>{3, 5, 16, 19, 24, 29, 30, 31, 37, 38}));
    QCOMPARE(v->table()->model()->rowCount(), 10);

    choose(v->filter("t"), -1);
    choose(v->colour_by(), QString("sharding"));
    QCOMPARE(w.llm_plans().colour_by(), QString("sharding"));
    const QImage shot = s->grab().toImage();
    QCOMPARE(static_cast<int>(s->drawn().size()), 40);
    int none = 0, distributed = 0;
    for (const PlansScatter::DrawnPoint& p : s->drawn()) {
      QCOMPARE(p.colour, w.llm_plans().colour(p.row));
      none += p.colour == ramp_color(0.0) ? 1 : 0;
      distributed += p.colour == ramp_color(1.0) ? 1 : 0;
    }
    QCOMPARE(none, 5);
    QCOMPARE(distributed, 35);
    QVERIFY(count_colour(shot, ramp_color(0.0)) > 20);  // the 5 points and the legend's swatch
    QVERIFY(count_colour(shot, ramp_color(1.0)) > 20);
    // The capacity, 80 GB, is inside the axis (1.1 x 78.9 GB): a dashed red line there.
    const int cx = static_cast<int>(std::lround(s->capacity_x()));
    QVERIFY(cx > s->plot_rect().center().x() && cx < s->plot_rect().right());
    int red = 0;
    for (int y = s->plot_rect().top(); y <= s->plot_rect().bottom(); ++y) {
      for (int dx = -1; dx <= 1; ++dx) red += shot.pixelColor(cx + dx, y).red() > 180 && shot.pixelColor(cx + dx, y).green() < 90;
    }
    QVERIFY2(red > s->plot_rect().height() / 4, qPrintable(QString::number(red)));

    // A click on a point no other point is within 7 px of selects its row.
    int lone = -1;
    for (int r = 0; r < w.llm_plans().rowCount() && lone < 0; ++r) {
      bool alone = true;
      for (int o = 0; o < w.llm_plans().rowCount(); ++o) {
        const QPointF d = s->point_of(r) - s->point_of(o);
        alone = alone && (o == r || d.x() * d.x() + d.y() * d.y() > 64);
      }
      if (alone) lone = r;
    }
    QVERIFY(lone >= 0);
    QTest::mouseClick(s, Qt::LeftButton, {}, s->point_of(lone).toPoint());
    QCOMPARE(v->table()->selectionModel()->currentIndex().row(), lone);
    QCOMPARE(s->current(), lone);  // unfiltered: row r is best[r]
    // And a row selected in the table rings its point.
    v->table()->selectRow(7);
    QCOMPARE(s->current(), 7);
    // Filtering keeps the selected layout selected while it is shown: best[7] has t = 1.
    choose(v->filter("t"), 1);
    QCOMPARE(v->table()->selectionModel()->currentIndex().row(), w.llm_plans().row_of(7));
    QVERIFY(w.llm_plans().row_of(7) >= 0);
  }

  void bad_file_exits_2_naming_file_and_field() {
    QTemporaryDir dir;
    std::ifstream in(kFixture.toStdString());
    Json j = Json::parse(in);
    j["best"][2]["step_ms"] = -1;
    const QString bad = dir.filePath("r.json");
    std::ofstream(bad.toStdString()) << j.dump();
    QProcess p;
    p.start(PIPESCOPE_GUI_EXE, {"--llm-plan", bad, "--screenshot", dir.filePath("never.png")});
    QVERIFY(p.waitForFinished(60000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 2);
    QVERIFY2(err.contains(bad + ": best[2].step_ms: expected a number >= 0, got -1"), qPrintable(err));
    QVERIFY(!QFile::exists(dir.filePath("never.png")));
    // So does a file --plan cannot read (this one is no plan).
    QProcess plan;
    plan.start(PIPESCOPE_GUI_EXE, {"--plan", bad, "--screenshot", dir.filePath("never.png")});
    QVERIFY(plan.waitForFinished(60000));
    const QString plan_err = QString::fromUtf8(plan.readAllStandardError());
    QCOMPARE(plan.exitCode(), 2);
    QVERIFY2(plan_err.contains(bad + ": format: expected \"pipescope.plan\", got \"pipescope.llm_plan\""),
             qPrintable(plan_err));
    QVERIFY(!QFile::exists(dir.filePath("never.png")));
    // In the window: the tab and the status line say the same.
    MainWindow w(parse_app_options({"pipescope-gui", "--llm-plan", bad}));
    QVERIFY(w.startup_error().contains("best[2].step_ms"));
    QVERIFY(w.llm_plans_view()->description().contains("best[2].step_ms"));
    QCOMPARE(w.llm_plans().rowCount(), 0);
  }

  // File > Open, a dropped file and open_any go by the file's "format".
  void open_any_reads_an_llm_plan_by_its_format() {
    MainWindow w(parse_app_options({"pipescope-gui"}));
    QCOMPARE(w.llm_plans().rowCount(), 0);
    QVERIFY(w.open_any(kFixture));
    QCOMPARE(w.llm_plans().rowCount(), 40);
    QCOMPARE(w.llm_plans_view()->filter("cp")->count(), 4);  // all, cp = 1, 2, 4
  }

  void screenshot_of_the_tab() {
    QTemporaryDir dir;
    QProcess p;
    p.start(PIPESCOPE_GUI_EXE, {"--llm-plan", kFixture, "--screenshot", dir.filePath("llm.png")});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    const QImage shot(dir.filePath("llm.png"));
    QCOMPARE(shot.size(), QSize(1400, 900));
    // Coloured by t (the default): 30 points at the ramp's start, 10 at its end.
    QVERIFY(count_colour(shot, ramp_color(0.0)) > 100);
    QVERIFY(count_colour(shot, ramp_color(1.0)) > 20);
  }
};

QTEST_MAIN(LlmPlansWindowTest)
#include "llm_plans_window_test.moc"
