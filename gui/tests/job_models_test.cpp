// A version 3 plan's job in the GUI's models (gui/models/job_model.h) equals the other front
// door, `pipescope simulate --plan FILE --json`, on the same file: the step to the
// nanosecond and every pipeline rank's bytes of each kind to the byte, for plans llm-plan
// writes here (the README's Llama-3-70B job on 64 H100s for megatron, torch and deepspeed;
// Mixtral 8x7B, a MoE, for megatron). The expected numbers are the binary's; none is
// recomputed here. Every job the search called fitting is drawn fitting (issue #37: the
// GUI painted the 70B winner's four stages OOM; its rank 0 needs 69.04 GiB of 74.5 GiB).
// An edit through the panel's fields (M, d) equals `simulate --plan` of the edited job
// saved as a plan (File > Export plan), and an edit the framework refuses is refused in its words.
// Over issue #37's 33-job grid the GUI shows the search's own step and bytes for its best.
#include <QAbstractItemModelTester>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "core/error.h"
#include "core/json_reader.h"
#include "gui/models/job_model.h"
#include "gui/models/plan_evaluation.h"
#include "gui/models/summary_model.h"
#include "tests/llm/llm_job_grid.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using namespace pipescope::gui;

namespace {

const QString kHf = QString(PIPESCOPE_SOURCE_DIR) + "/profiles/hf/";

// The one JSON object a command prints on stdout (a slow search's progress goes to stderr).
Json run_cli(const QStringList& args) {
  QProcess p;
  p.start(PIPESCOPE_BINARY, args);
  if (!p.waitForFinished(300000) || p.exitCode() != 0) {
    qWarning() << args << p.readAllStandardError();
    return {};
  }
  const std::string out = p.readAllStandardOutput().toStdString();
  return Json::parse(out.substr(std::min(out.find('{'), out.size())));
}

struct Case {
  const char* name;
  QString config;
  QStringList flags;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"llama70b-megatron", "llama-3-70b.json", {"--global-batch-size", "512", "--framework", "megatron"}},
      {"llama70b-torch", "llama-3-70b.json", {"--global-batch-size", "512", "--framework", "torch"}},
      {"llama70b-deepspeed", "llama-3-70b.json", {"--global-batch-size", "512", "--framework", "deepspeed"}},
      {"mixtral-megatron", "mixtral-8x7b.json", {"--global-batch-size", "256", "--framework", "megatron"}},
  };
  return c;
}

// llm-plan's best layout for the case, written as a version 3 plan at `path`.
Json plan_case(const Case& c, const QString& path) {
  return run_cli(QStringList{"llm-plan", "--gpu", "h100-sxm", "--hf-config", kHf + c.config, "--seq-length", "4096",
                             "--gpus", "64", "--top", "1", "--json", "--out", path} + c.flags);
}

// What the GUI's plan worker computes for the file: evaluate() of its job.
Evaluation gui_evaluation(const QString& path) {
  std::optional<JobInputs> in = read_plan_job(load_plan(path.toStdString()));
  if (!in) throw InputError(path.toStdString() + ": not a version 3 plan");
  PlanInputs inputs;
  inputs.job = std::make_shared<const JobInputs>(std::move(*in));
  return evaluate(inputs);
}

// The GUI's models of `e` against simulate --plan --json's object `sim`.
void expect_models_equal(const Evaluation& e, const Json& sim, const char* name) {
  QVERIFY2(e.job, name);
  const JobEvaluation& j = *e.job;
  QCOMPARE(j.report.time.step_ns, sim["step_ns"].get<int64_t>());
  // The timeline drawn is step_time's own simulation of the pipeline: its step is the pipeline part.
  QCOMPARE(e.report.step_ns, j.report.time.pipeline_ns);
  QVERIFY(!e.report.timeline.events.empty());
  QCOMPARE(j.capacity_bytes(), int64_t{80000000000});  // profiles/gpus/h100-sxm.json: 80 GB
  // the framework's launch reserve kept free, as the search keeps it (llm/framework.cpp):
  // 0.5 + 1.5 GB + 5 % for Megatron-LM and torch, DeepSpeed's 1 GB bucket besides
  QCOMPARE(j.usable_bytes(), j.inputs.job.framework == Framework::DeepSpeed ? 73e9 : 74e9);

  SummaryModel summary;
  QAbstractItemModelTester summary_tester(&summary, QAbstractItemModelTester::FailureReportingMode::QtTest);
  summary.set_job(j);
  const int step_row = summary.row_of("Step time");
  QVERIFY(step_row >= 0);
  QCOMPARE(summary.data(summary.index(step_row, 1), SummaryModel::RawRole).toLongLong(), sim["step_ns"].get<int64_t>());

  LlmMemoryModel memory;
  QAbstractItemModelTester memory_tester(&memory, QAbstractItemModelTester::FailureReportingMode::QtTest);
  memory.set_bars(llm_memory_bars(j.report.memory), j.capacity_bytes());
  const Json& ranks = sim["ranks"];
  QCOMPARE(memory.rowCount(), static_cast<int>(ranks.size()));
  const char* kinds[] = {"parameter_bytes", "gradient_bytes", "optimizer_bytes", "activation_bytes"};
  for (int r = 0; r < memory.rowCount(); ++r) {
    for (int k = 0; k < 4; ++k) {
      const double bytes = memory.data(memory.index(r, LlmMemoryModel::Parameters + k), LlmMemoryModel::RawRole).toDouble();
      QVERIFY2(bytes == ranks[r][kinds[k]].get<double>(), qPrintable(QString("%1 rank %2 %3").arg(name).arg(r).arg(kinds[k])));
    }
    // llm-plan lists only layouts whose peak fits the GPU file's memory: so must the GUI.
    QVERIFY2(memory.fits(r), qPrintable(QString("%1 rank %2").arg(name).arg(r)));
    const int row = summary.row_of(QString("Memory per GPU, rank %1").arg(r));
    QVERIFY(row >= 0);
    QCOMPARE(summary.data(summary.index(row, 1), SummaryModel::RawRole).toDouble(), ranks[r]["total_bytes"].get<double>());
    QVERIFY(summary.data(summary.index(row, 1), SummaryModel::FitsRole).toBool());
  }
  QVERIFY(j.fits());
}

}  // namespace

class JobModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void jobsEqualSimulatePlanStepAndBytesByKind() {
    QTemporaryDir dir;
    for (const Case& c : cases()) {
      const QString path = dir.filePath(QString(c.name) + ".json");
      const Json best = plan_case(c, path);
      QVERIFY2(!best.is_null(), c.name);
      const Json sim = run_cli({"simulate", "--plan", path, "--json"});
      QVERIFY2(!sim.is_null(), c.name);
      QCOMPARE(sim["step_ns"], best["best"][0]["step_ns"]);  // the two front doors agree (cli_llm_job_test)
      expect_models_equal(gui_evaluation(path), sim, c.name);
      // The panel shows the job's layout: K = p, M, b, v, the schedule, recompute, r = d.
      const Job job = *plan_job(load_plan(path.toStdString()));
      const PlanChoice choice = job_choice(job);
      const Json& l = sim["layout"];
      QCOMPARE(choice.stages, l["p"].get<int>());
      QCOMPARE(choice.microbatches, l["microbatches"].get<int>());
      QCOMPARE(static_cast<int>(choice.microbatch_size), l["micro_batch"].get<int>());
      QCOMPARE(choice.chunks, l["v"].get<int>());
      QCOMPARE(choice.replicas, l["d"].get<int>());
      QCOMPARE(QString::fromStdString(to_string(choice.recompute)), QString::fromStdString(l["recompute"]));  // one enum
      QCOMPARE(QString::fromStdString(to_string(choice.schedule)), QString::fromStdString(sim["schedule"]));
      // Unedited, the panel's choice changes nothing: the job evaluated is the plan's.
      const JobEdit none = job_edit(job, choice);
      QVERIFY(!none.p && !none.v && !none.microbatches && !none.micro_batch && !none.d && !none.schedule);
    }
    // The README's job: Megatron's winner is t 8 sp (TP overlapped) cp 1 p 2 v 8 b 2 M 64
    // (docs/llm-scale.md; flash attention, the fitted H100 file, Megatron's default overlapped p2p).
    const Job job = *plan_job(load_plan(dir.filePath("llama70b-megatron.json").toStdString()));
    const std::vector<std::pair<QString, QString>> rows = job_layout_rows(job);
    auto value = [&](const QString& name) {
      for (const auto& [n, v] : rows) {
        if (n == name) return v;
      }
      return QString("(no row %1)").arg(name);
    };
    QCOMPARE(value("t (tensor parallel)"), QString("8"));
    QCOMPARE(value("SP (sequence parallel)"), QString("on"));
    QCOMPARE(value("cp (context parallel)"), QString("1"));
    QCOMPARE(value("p (pipeline ranks, K)"), QString("2"));
    QCOMPARE(value("v (chunks per rank)"), QString("8"));
    QCOMPARE(value("Schedule"), QString("interleaved"));
    QCOMPARE(value("M (micro-batches)"), QString("64"));
    QCOMPARE(value("Sharding"), QString("distributed-optimizer"));
    QCOMPARE(value("Framework"), QString("megatron"));
  }

  // The panel's M and d edit the job; the edited job saved as a plan (write_job_plan, what
  // llm-plan --out writes) gives `simulate --plan` exactly the GUI's step and bytes.
  void editedJobEqualsSimulatePlanOfTheEditedJob() {
    QTemporaryDir dir;
    const QString path = dir.filePath("job.json");
    QVERIFY(!plan_case(cases()[0], path).is_null());
    const JobInputs base = *read_plan_job(load_plan(path.toStdString()));
    PlanChoice choice = job_choice(base.job);
    choice.microbatches = 32;  // a multiple of p = 2, as interleaved needs
    choice.replicas = 8;       // d 8: 128 GPUs, the same global batch 2 x 32 x 8 = 512
    const JobEdit edit = job_edit(base.job, choice);
    QCOMPARE(edit.microbatches, std::optional<int>(32));
    QCOMPARE(edit.d, std::optional<int>(8));
    QVERIFY(!edit.p && !edit.v && !edit.schedule);
    PlanInputs in;
    in.job = std::make_shared<const JobInputs>(edit_job(base, edit));
    QCOMPARE(in.job->job.layout.gpus(), 128);
    const Evaluation e = evaluate(in);
    const QString edited = dir.filePath("edited.json");
    save_job_plan(*in.job, edited.toStdString());  // File > Export plan of the edited job
    const Json sim = run_cli({"simulate", "--plan", edited, "--json"});
    QVERIFY(!sim.is_null());
    QCOMPARE(sim["layout"]["d"].get<int>(), 8);
    expect_models_equal(e, sim, "edited");
    QVERIFY(e.job->report.time.step_ns != gui_evaluation(path).job->report.time.step_ns);  // the edit took

    // M 255 with interleaved on p 4: Megatron refuses (M a multiple of p); the edit says so.
    choice = job_choice(base.job);
    choice.microbatches = 255;
    try {
      edit_job(base, job_edit(base.job, choice));
      QFAIL("interleaved with M 255 on p 4 was accepted");
    } catch (const InputError& e) {
      QVERIFY2(QString(e.what()).contains("the interleaved schedule needs M to be a multiple of the number of stages p "
                                          "(Megatron-LM's rule); got M = 255, p = 2"), e.what());
    }
  }

  // Issue #37's grid (tests/llm/llm_job_grid.h, 33 jobs, every framework and schedule):
  // the best layout the search picks, written as `plan --out` writes it and opened, shows
  // in the summary and the memory chart the search's own step to the ns and each rank's
  // bytes of each kind to the byte, and every rank fits (the search keeps only layouts that do).
  void gridJobsShowTheSearchsStepAndBytes() {
    QTemporaryDir dir;
    int jobs = 0;
    for (const pipescope::testing::GridJob& g : pipescope::testing::job_grid()) {
      const GpuModel gpu = pipescope::testing::gpu_file(g.gpu);
      const LlmSearchResult r = search_layouts(pipescope::testing::request_of(g), gpu);
      QVERIFY2(!r.best.empty(), g.label.c_str());
      const LlmCandidate& best = r.best.front();
      Job job;
      job.shape = g.shape;
      job.shape.vocabulary = best.vocabulary;
      job.cluster = {g.gpu, gpu.gpus_per_node()};
      job.layout = best.layout;
      job.framework = g.framework;
      const QString path = dir.filePath(QString("job%1.json").arg(jobs));
      write_job_plan(job, gpu, g.gpu, path.toStdString());
      const Evaluation e = gui_evaluation(path);
      QVERIFY2(e.job, g.label.c_str());
      const JobEvaluation& j = *e.job;
      QCOMPARE(j.report.time.step_ns, best.step_ns);
      QCOMPARE(j.capacity_bytes(), gpu.node.memory_bytes);
      SummaryModel summary;
      summary.set_job(j);
      QCOMPARE(summary.data(summary.index(summary.row_of("Step time"), 1), SummaryModel::RawRole).toLongLong(),
               best.step_ns);
      LlmMemoryModel memory;
      memory.set_bars(llm_memory_bars(j.report.memory), j.capacity_bytes());
      QCOMPARE(memory.rowCount(), static_cast<int>(best.ranks.size()));
      for (int k = 0; k < memory.rowCount(); ++k) {
        const RankMemory& want = best.ranks[static_cast<std::size_t>(k)];
        const double bytes[] = {want.parameter_bytes, want.gradient_bytes, want.optimizer_bytes, want.activation_bytes};
        for (int kind = 0; kind < 4; ++kind) {
          const double shown =
              memory.data(memory.index(k, LlmMemoryModel::Parameters + kind), LlmMemoryModel::RawRole).toDouble();
          QVERIFY2(shown == bytes[kind], qPrintable(QString("%1 rank %2 kind %3").arg(g.label.c_str()).arg(k).arg(kind)));
        }
        QVERIFY2(memory.fits(k), qPrintable(QString("%1 rank %2").arg(g.label.c_str()).arg(k)));
      }
      ++jobs;
    }
    QCOMPARE(jobs, 33);
  }

  // v1 / v2 plans hold no job: read_plan_job says so (the GUI shows them with their profile).
  void aPlanWithoutAJobHasNone() {
    Plan plan;
    plan.profile = "profile.json";
    plan.stages = {{0, 2, {0}}};
    QVERIFY(!read_plan_job(plan));
  }
};

QTEST_MAIN(JobModelsTest)
#include "job_models_test.moc"
