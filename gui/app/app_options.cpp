#include "gui/app/app_options.h"

#include <QCommandLineParser>
#include <QDir>

#include "core/data_dir.h"
#include "core/error.h"
#include "core/schedule.h"
#include "planner/plan_builder.h"

namespace pipescope::gui {

static int to_int(const QCommandLineParser& p, const QString& name, int min, int max) {
  bool ok = false;
  const int v = p.value(name).toInt(&ok);
  if (!ok || v < min || v > max) {
    throw InputError("--" + name.toStdString() + ": expected a whole number from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", got \"" + p.value(name).toStdString() + "\"");
  }
  return v;
}

AppOptions parse_app_options(const QStringList& arguments) {
  QCommandLineParser p;
  p.setApplicationDescription("pipescope-gui: explore pipeline-parallel training plans");
  p.addHelpOption();
  p.addOptions({
      {"profile", "Profile file (pipescope.profile); default: the bundled GPT-1.3B profile, or with --plan the plan's",
       "FILE"},
      {"hardware", "Hardware file (pipescope.hardware); default with the bundled profile: 8x H200", "FILE"},
      {{"stages", "K"}, "Pipeline stages K (default 4)", "K", "4"},
      {{"microbatches", "M"}, "Micro-batches M per step (default 8)", "M", "8"},
      {"microbatch-size", "Samples per micro-batch, a whole number (default 0: the profile's first batch size)", "B", "0"},
      {"schedule", QString::fromStdString(schedule_kind_names() + " (default 1f1b)"), "KIND", "1f1b"},
      {"chunks", "Model chunks per device, interleaved only (default 1)", "V", "1"},
      {"recompute", "Re-materialise activations"},
      {"partition", "uniform | gpipe | optimal (balanced = optimal; default optimal)", "NAME", "optimal"},
      {"replicas", "Devices per stage r (data parallel inside a stage; default 1)", "R", "1"},
      {"measurement", "Measurement JSON to compare with the prediction", "FILE"},
      {"trace", "Chrome trace of the measured run (with --measurement)", "FILE"},
      {"runtime", "What the runtime spends around the ops (a pipescope.runtime file: `pipescope calibrate` writes "
                  "one), charged in every simulation", "FILE"},
      {"sweep", "Run the K x M sweep at start (with --screenshot: before the picture)"},
      {"screenshot", "Render the main window to a PNG and exit", "FILE"},
      {"pin", "Plan file (pipescope.plan) pinned as A in the A/B tab", "FILE"},
      {"plan", "Plan file (pipescope.plan) to show with the profile it names (--profile, if given, must name the "
               "same file); a version 2 plan's layout adds the memory per GPU as Megatron-LM keeps it; a version 3 "
               "plan (llm-plan --out) holds its whole job, shown as `simulate --plan` evaluates it", "FILE"},
      {"llm-plan", "Result of `pipescope llm-plan ... --json` (pipescope.llm_plan) to explore in the llm-plans tab, "
                   "which opens unless --tab names another; llm-plan prints 5 layouts unless --top says more (e.g. "
                   "--top 50)", "FILE"},
      {"tab", "Tab to show: timeline | layers | sweep | compare | plans | ab | distribution | llm-plans (default "
              "timeline, or llm-plans with --llm-plan; plans runs the search, distribution samples 1000 steps)",
       "NAME", "timeline"},
      {"size", "Window size WxH (default 1400x900)", "WxH", "1400x900"},
  });
  if (!p.parse(arguments)) throw InputError(p.errorText().toStdString());
  AppOptions o;
  if (p.isSet("help") || p.isSet("help-all")) {
    o.help_text = p.helpText();
    return o;
  }
  if (!p.positionalArguments().isEmpty()) {
    throw InputError("unexpected argument \"" + p.positionalArguments().front().toStdString() + "\"");
  }
  o.profile_path = p.value("profile");
  o.hardware_path = p.value("hardware");
  o.runtime_path = p.value("runtime");
  o.stages = to_int(p, "stages", 1, kMaxDevices);
  o.microbatches = to_int(p, "microbatches", 1, kMaxGuiMicrobatches);
  o.microbatch_size = to_int(p, "microbatch-size", 0, kMaxGuiMicrobatchSize);
  o.schedule = p.value("schedule");
  o.chunks = to_int(p, "chunks", 1, kMaxGuiChunks);
  o.recompute = recompute_from_r_ops(p.isSet("recompute"));
  // Parsed once here (balanced is optimal's alias); the controls show to_string of it.
  o.partition = parse_partition_kind(p.value("partition").toStdString());
  parse_schedule_kind(o.schedule.toStdString());  // throws InputError naming the accepted kinds
  o.replicas = to_int(p, "replicas", 1, kMaxDevices);
  o.measurement_path = p.value("measurement");
  o.trace_path = p.value("trace");
  o.screenshot_path = p.value("screenshot");
  o.run_sweep = p.isSet("sweep");
  o.llm_plan_path = p.value("llm-plan");
  o.tab = p.isSet("tab") || o.llm_plan_path.isEmpty() ? p.value("tab") : "llm-plans";
  if (!QStringList{"timeline", "layers", "sweep", "compare", "plans", "ab", "distribution", "llm-plans"}.contains(o.tab)) {
    throw InputError("--tab: expected timeline, layers, sweep, compare, plans, ab, distribution or llm-plans, got \"" +
                     o.tab.toStdString() + "\"");
  }
  o.pin_path = p.value("pin");
  o.plan_path = p.value("plan");
  const QStringList wh = p.value("size").split('x');
  if (wh.size() != 2 || wh[0].toInt() < 200 || wh[1].toInt() < 200 || wh[0].toInt() > 8000 || wh[1].toInt() > 8000) {
    throw InputError("--size: expected WxH between 200x200 and 8000x8000, got \"" + p.value("size").toStdString() + "\"");
  }
  o.size = QSize(wh[0].toInt(), wh[1].toInt());
  if (o.profile_path.isEmpty() && o.plan_path.isEmpty()) {  // a plan names its own profile (or holds its job)
    o.profile_path = QDir(profiles_dir()).filePath("gpt-1.3b-h200.json");
    if (o.hardware_path.isEmpty()) o.hardware_path = QDir(profiles_dir()).filePath("h200-8x-nvlink.json");
  }
  return o;
}

QString profiles_dir() { return QString::fromStdString(data_dir("profiles")); }

}  // namespace pipescope::gui
