// The command line of pipescope-gui: the plan flags of `pipescope simulate`
// (--profile, --hardware, --stages, --microbatches, --microbatch-size, --schedule,
// --chunks, --recompute, --partition) plus --screenshot FILE, --tab and --size, and the
// files to show: --plan, --pin, --measurement, --trace, --llm-plan (llm-plan --json's result).
// Without --profile the bundled GPT profile and its H200 hardware file load, unless --plan
// names a plan, which brings its own profile (or, version 3, its whole job).
#pragma once

#include <QSize>
#include <QString>
#include <QStringList>

#include "core/recompute.h"
#include "planner/partitioner.h"

namespace pipescope::gui {

// The largest values the controls accept (the command line is held to the same).
inline constexpr int kMaxGuiMicrobatches = 65536;
inline constexpr int kMaxGuiMicrobatchSize = 65536;
inline constexpr int kMaxGuiChunks = 64;

struct AppOptions {
  QString profile_path;      // empty only with plan_path: the plan's own
  QString hardware_path;
  QString runtime_path;      // --runtime: a pipescope.runtime file or a bundled name (core/runtime_costs.h)
  int stages = 4;
  int microbatches = 8;
  double microbatch_size = 0;
  QString schedule = "1f1b";
  int chunks = 1;
  Recompute recompute = Recompute::None;  // --recompute: Full (core/recompute.h)
  PartitionKind partition = PartitionKind::Optimal;
  int replicas = 1;
  QString screenshot_path;
  QString tab = "timeline";  // timeline | layers | sweep | compare | plans | ab | distribution | llm-plans
                             // (plans searches at start; --llm-plan alone opens llm-plans)
  QSize size{1400, 900};
  bool run_sweep = false;    // start the K x M sweep at once
  QString measurement_path;
  QString trace_path;
  QString pin_path;          // a plan file pinned as A in the A/B tab
  QString plan_path;         // a plan file shown as the current plan, with its own profile or job
  QString llm_plan_path;     // a pipescope.llm_plan file (llm-plan --json) shown in the llm-plans tab
  QString help_text;         // set when --help was given: main() prints it and exits 0
};

// Parses `arguments` (argv[0] first). Throws InputError naming the bad flag.
AppOptions parse_app_options(const QStringList& arguments);

// The folder of bundled profiles: installed beside the binary
// (<prefix>/share/pipescope/profiles), else the source tree's (core/data_dir.h).
QString profiles_dir();

}  // namespace pipescope::gui
