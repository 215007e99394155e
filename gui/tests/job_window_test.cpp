// `pipescope-gui --plan FILE` in the window. A version 3 plan (the README's Llama-3-70B job
// on 64 H100s, written by llm-plan here) loads its job with no --profile: the summary shows
// `simulate --plan --json`'s step in ns, the panel the job's K 4, M 256, interleaved (not
// the defaults K 4, M 8, 1f1b), the memory chart one bar per pipeline rank by kind with the
// GPU file's capacity, and nothing is painted OOM (issue #37: the four stages were, though
// the search said the job fits at 69.04 GiB of 74.5). Editing M re-evaluates the job; an M
// the framework refuses shows its refusal; File > Export plan writes the edited job as a
// version 3 plan that `simulate --plan` gives the same step. A v1 plan loads the profile it names (not the
// bundled default); --profile naming another profile, or a job field that does not read,
// exits 2 naming both files / the file and the field. Plans searches the loaded job's layouts.
#include <QComboBox>
#include <QProcess>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>

#include "core/plan.h"
#include "core/profile.h"
#include "gui/app/app_options.h"
#include "gui/app/controls_panel.h"
#include "gui/app/llm_memory_view.h"
#include "gui/app/main_window.h"
#include "gui/app/memory_view.h"
#include "gui/models/ab_model.h"
#include "gui/models/job_model.h"
#include "planner/plan_builder.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using namespace pipescope::gui;

namespace {

const QString kSource = PIPESCOPE_SOURCE_DIR;

Json cli_json(const QStringList& args) {
  QProcess p;
  p.start(PIPESCOPE_BINARY, args);
  if (!p.waitForFinished(300000) || p.exitCode() != 0) return {};
  const std::string out = p.readAllStandardOutput().toStdString();
  return Json::parse(out.substr(std::min(out.find('{'), out.size())));
}

// The README's job, planned with llm-plan --out into `dir` at t 4, cp 4, p 4, b 2 and no TP
// overlap (its winner before fused attention; pinned so that the edits below have a t to
// double and an M to halve); returns the plan's path.
QString plan_70b(const QTemporaryDir& dir) {
  const QString path = dir.filePath("llama70b.json");
  cli_json({"llm-plan", "--gpu", "h100-sxm", "--hf-config", kSource + "/profiles/hf/llama-3-70b.json", "--seq-length",
            "4096", "--gpus", "64", "--global-batch-size", "512", "--top", "1", "--tensor-model-parallel-size", "4",
            "--context-parallel-size", "4", "--pipeline-model-parallel-size", "4", "--micro-batch-size", "2",
            "--tp-comm-overlap", "off", "--json", "--out", path});
  return path;
}

struct GuiRun {
  int code = -1;
  QString err;
};
GuiRun run_gui(const QStringList& args) {
  QProcess p;
  p.start(PIPESCOPE_GUI_EXE, args);
  if (!p.waitForFinished(120000)) return {};
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardError())};
}

// File > Export plan of the job shown, then `simulate --plan` of that file alone: its JSON,
// whose step must be the window's (checked here).
Json saved_job_simulated(MainWindow& w, const QString& path) {
  w.save_plan(path);
  const Json sim = cli_json({"simulate", "--plan", path, "--json"});
  if (sim.is_null() || !w.evaluation() || !w.evaluation()->job ||
      sim["step_ns"].get<int64_t>() != w.evaluation()->job->report.time.step_ns) {
    qWarning() << "simulate --plan" << path << "does not give the window's step";
    return Json{{"layout", Json::object({{"t", -1}, {"microbatches", -1}})}};
  }
  return sim;
}

}  // namespace

class JobWindowTest : public QObject {
  Q_OBJECT
 private slots:
  void aJobPlanLoadsItsJob() {
    QTemporaryDir dir;
    const QString path = plan_70b(dir);
    const Json sim = cli_json({"simulate", "--plan", path, "--json"});
    QVERIFY(!sim.is_null());
    MainWindow w(parse_app_options({"pipescope-gui", "--plan", path}));
    w.wait_for_plan();
    QCoreApplication::processEvents();
    QVERIFY2(w.startup_error().isEmpty(), qPrintable(w.startup_error()));
    QVERIFY(w.evaluation() && w.evaluation()->job && w.job());

    // The summary shows evaluate_job's step, the ns simulate --plan prints.
    const int64_t step_ns = sim["step_ns"].get<int64_t>();
    const int row = w.summary().row_of("Step time");
    QVERIFY(row >= 0);
    QCOMPARE(w.summary().data(w.summary().index(row, 1), SummaryModel::RawRole).toLongLong(), step_ns);
    const QString text = w.summary().data(w.summary().index(row, 1)).toString();
    QVERIFY2(text.contains(QString("(%1 ns)").arg(step_ns)), qPrintable(text));

    // The panel shows the job's pipeline: K = p 4, M 256, interleaved with v 5, b 2, r = d 1.
    const Json& l = sim["layout"];
    QCOMPARE(w.controls()->stages_box()->value(), l["p"].get<int>());
    QCOMPARE(w.controls()->microbatches_box()->value(), l["microbatches"].get<int>());
    QCOMPARE(w.controls()->schedule_box()->currentData().toString(), QString::fromStdString(sim["schedule"]));
    QCOMPARE(w.controls()->microbatches_box()->value(), 256);

    // Nothing painted OOM: every summary row fits, the profile's curves are not drawn, the
    // job's bars are, each under the 80 GB (74.5 GiB) of profiles/gpus/h100-sxm.json.
    for (int r = 0; r < w.summary().rowCount(); ++r) {
      QVERIFY2(w.summary().data(w.summary().index(r, 1), SummaryModel::FitsRole).toBool(),
               qPrintable(w.summary().data(w.summary().index(r, 0)).toString()));
    }
    QVERIFY(w.memory_view()->isHidden());
    QVERIFY(!w.llm_memory_view()->isHidden());
    QCOMPARE(w.llm_memory().rowCount(), static_cast<int>(sim["ranks"].size()));
    QCOMPARE(w.llm_memory().capacity_bytes(), int64_t{80000000000});
    for (int r = 0; r < w.llm_memory().rowCount(); ++r) {
      QVERIFY(w.llm_memory().fits(r));
      QCOMPARE(w.llm_memory().bars()[r].parts[3], sim["ranks"][r]["activation_bytes"].get<double>());
    }
    QVERIFY2(!w.status_text().contains("not fit"), qPrintable(w.status_text()));
    // Opened over the bundled profile (File > Open, a drop), the job replaces its plan; the
    // sweep, which searches that profile's plans and not the job's, starts nothing.
    MainWindow over(parse_app_options({"pipescope-gui"}));
    over.wait_for_plan();
    QVERIFY(over.open_any(path));
    over.wait_for_plan();
    QCoreApplication::processEvents();
    QVERIFY(over.evaluation() && over.evaluation()->job);
    QCOMPARE(over.evaluation()->job->report.time.step_ns, step_ns);
    over.run_sweep();
    QVERIFY(!over.sweep_worker().running());

    // M 128 re-evaluates the job (d 1: global batch 256); M 255 is refused in Megatron's words.
    w.controls()->microbatches_box()->setValue(128);
    w.wait_for_plan();
    QCoreApplication::processEvents();
    QVERIFY(w.evaluation() && w.evaluation()->job);
    QCOMPARE(w.evaluation()->job->inputs.job.layout.microbatches, 128);
    QVERIFY(w.evaluation()->job->report.time.step_ns < step_ns);  // half the micro-batches
    // File > Export plan writes the edited job as a version 3 plan: simulate --plan gives its step.
    QCOMPARE(saved_job_simulated(w, dir.filePath("saved.json"))["layout"]["microbatches"].get<int>(), 128);
    QVERIFY(QFile::exists(dir.filePath("saved.profile.json")));
    w.controls()->microbatches_box()->setValue(255);
    w.wait_for_plan();
    QCoreApplication::processEvents();
    QVERIFY(!w.evaluation());
    QVERIFY2(w.status_text().contains("got M = 255, p = 4"), qPrintable(w.status_text()));

    // The job box edits t, SP, cp, ep, recompute and sharding: t 8 (from 4) doubles the GPUs
    // to 128 and repads the vocabulary (128256 to a multiple of 128 x 8: 129024, where t 4
    // had 128512); saved, simulate --plan gives the GUI's step. ep 2 on the dense model is
    // refused in Megatron's words.
    w.controls()->microbatches_box()->setValue(128);
    w.wait_for_plan();
    QCOMPARE(w.controls()->tensor_parallel_box()->value(), 4);
    w.controls()->tensor_parallel_box()->setValue(8);
    w.wait_for_plan();
    QCoreApplication::processEvents();
    QVERIFY2(w.evaluation() && w.evaluation()->job, qPrintable(w.status_text()));
    const Job& t8 = w.evaluation()->job->inputs.job;
    QCOMPARE(t8.layout.t, 8);
    QCOMPARE(t8.layout.gpus(), 128);
    QCOMPARE(t8.shape.vocabulary, 129024);
    QCOMPARE(saved_job_simulated(w, dir.filePath("t8.json"))["layout"]["t"].get<int>(), 8);
    w.controls()->expert_parallel_box()->setValue(2);
    w.wait_for_plan();
    QCoreApplication::processEvents();
    QVERIFY(!w.evaluation());
    QVERIFY2(w.status_text().contains("needs --num-experts"), qPrintable(w.status_text()));
  }

  // With a job loaded, Plans searches that job (issue #37: it used to search the bundled
  // profile's plans, on other hardware): its rows are `pipescope plan`'s with the job's
  // model, GPU file, 64 GPUs, global batch 512 and framework, the first its winner to the
  // ns (33,415,863,412); clicking the second point loads that layout into the job, which
  // then evaluates to that row's step, and the panel shows its pipeline.
  void plansSearchTheLoadedJob() {
    QTemporaryDir dir;
    const QString path = plan_70b(dir);
    const Json cli = cli_json({"plan", "--gpu", "h100-sxm", "--hf-config", kSource + "/profiles/hf/llama-3-70b.json",
                               "--seq-length", "4096", "--gpus", "64", "--global-batch-size", "512", "--top", "50",
                               "--json"});
    QVERIFY(!cli.is_null());
    MainWindow w(parse_app_options({"pipescope-gui", "--plan", path}));
    w.wait_for_plan();
    QCoreApplication::processEvents();
    w.run_plans();
    w.wait_for_plans();
    QCoreApplication::processEvents();
    QVERIFY(w.job_plans());
    QVERIFY(!w.plans_result());
    const LlmSearchResult& r = *w.job_plans();
    QCOMPARE(r.best.size(), cli["best"].size());
    for (std::size_t k = 0; k < r.best.size(); ++k) QCOMPARE(r.best[k].step_ns, cli["best"][k]["step_ns"].get<int64_t>());
    QCOMPARE(r.best.front().step_ns, int64_t{30920784029});  // t 8 TP-overlapped p 2 v 8, overlapped p2p
    QCOMPARE(w.plans().rowCount(), static_cast<int>(r.best.size()));

    w.load_candidate(1);
    w.wait_for_plan();
    QCoreApplication::processEvents();
    QVERIFY(w.evaluation() && w.evaluation()->job);
    QCOMPARE(w.evaluation()->job->report.time.step_ns, r.best[1].step_ns);
    QCOMPARE(w.controls()->stages_box()->value(), r.best[1].layout.p);
    QCOMPARE(w.controls()->microbatches_box()->value(), r.best[1].layout.microbatches);

    // A/B of two jobs: the winner pinned (A) against the first runner-up with a data-parallel
    // tail (B: today the fifth, d 2, 0.321 s exposed), whole steps (not the pipeline part the
    // timelines draw) and each rank's memory per GPU, as the search has them.
    std::size_t b = 1;
    while (b < r.best.size() && r.best[b].dp_exposed_ns == 0) ++b;
    QVERIFY(b < r.best.size());
    w.load_candidate(0);
    w.wait_for_plan();
    QCoreApplication::processEvents();
    w.pin_current();
    w.load_candidate(static_cast<int>(b));
    w.wait_for_plan();
    QCoreApplication::processEvents();
    const AbModel& ab = w.ab();
    QCOMPARE(ab.data(ab.index(AbModel::StepTime, AbModel::A), AbModel::RawRole).toDouble(),
             static_cast<double>(r.best[0].step_ns));
    QCOMPARE(ab.data(ab.index(AbModel::StepTime, AbModel::B), AbModel::RawRole).toDouble(),
             static_cast<double>(r.best[b].step_ns));
    const int memory_rows = ab.rowCount() - 4;  // step, throughput, bubble, MFU, then one row per rank
    QCOMPARE(memory_rows, static_cast<int>(std::max(r.best[0].ranks.size(), r.best[b].ranks.size())));
    // A job with fewer pipeline ranks than the other shows nothing (0) in the rows past its last.
    auto total = [&](std::size_t c, int k) {
      const std::vector<RankMemory>& ranks = r.best[c].ranks;
      return static_cast<std::size_t>(k) < ranks.size() ? ranks[static_cast<std::size_t>(k)].total() : 0.0;
    };
    for (int k = 0; k < memory_rows; ++k) {
      QCOMPARE(ab.data(ab.index(4 + k, AbModel::A), AbModel::RawRole).toDouble(), total(0, k));
      QCOMPARE(ab.data(ab.index(4 + k, AbModel::B), AbModel::RawRole).toDouble(), total(b, k));
    }
  }

  // A v1 plan of the bundled GPT-13B profile (not the default 1.3B): its profile loads,
  // and the panel shows its K 4, M 16, interleaved v 2.
  void aProfilePlanLoadsItsOwnProfile() {
    QTemporaryDir dir;
    const QString profile_path = kSource + "/profiles/gpt-13b-h200.json";
    const Profile profile = load_profile(profile_path.toStdString());
    PlanChoice c;
    c.stages = 4, c.microbatches = 16, c.schedule = ScheduleKind::Interleaved, c.chunks = 2;
    Plan plan = make_plan(profile, c).plan;
    plan.profile = profile_path.toStdString();
    const QString path = dir.filePath("v1.json");
    std::ofstream(path.toStdString()) << plan_to_json(plan).dump();
    MainWindow w(parse_app_options({"pipescope-gui", "--plan", path}));
    w.wait_for_plan();
    QCoreApplication::processEvents();
    QVERIFY2(w.startup_error().isEmpty(), qPrintable(w.startup_error()));
    QVERIFY(w.evaluation() && !w.evaluation()->job);
    QCOMPARE(w.evaluation()->profile->model, profile.model);
    QCOMPARE(w.controls()->stages_box()->value(), 4);
    QCOMPARE(w.controls()->microbatches_box()->value(), 16);
    QCOMPARE(w.controls()->schedule_box()->currentData().toString(), QString("interleaved"));

    // --profile naming another profile than the plan's: exit 2 naming both.
    const QString other = kSource + "/profiles/gpt-1.3b-h200.json";
    const GuiRun r = run_gui({"--plan", path, "--profile", other, "--screenshot", dir.filePath("never.png")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--profile " + other) && r.err.contains(path) && r.err.contains(profile_path), qPrintable(r.err));
    QVERIFY(!QFile::exists(dir.filePath("never.png")));
    // The same profile named again is no contradiction.
    QCOMPARE(run_gui({"--plan", path, "--profile", profile_path, "--screenshot", dir.filePath("same.png")}).code, 0);
  }

  // A job field that does not read: exit 2 naming the file and the JSON path.
  void aBadJobFieldExits2NamingFileAndField() {
    QTemporaryDir dir;
    const QString path = plan_70b(dir);
    std::ifstream in(path.toStdString());
    Json j = Json::parse(in);
    j["job"]["model"]["shape"]["layers"] = "eighty";
    const QString bad = dir.filePath("bad.json");
    std::ofstream(bad.toStdString()) << j.dump();
    const GuiRun r = run_gui({"--plan", bad, "--screenshot", dir.filePath("never.png")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(bad) && r.err.contains("job.model.shape.layers"), qPrintable(r.err));
    QVERIFY(!QFile::exists(dir.filePath("never.png")));
  }
};

QTEST_MAIN(JobWindowTest)
#include "job_window_test.moc"
