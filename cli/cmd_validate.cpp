// `pipescope validate FILE...`: reads each file with the reader its "format" names (the
// same reader simulate, run and compare use; a v2 plan's layout and a v3 plan's job too; llm-plan --json's
// result as pipescope-gui reads it; a v2 plan's layout against the profile beside it, when there is one): "FILE: ok (FORMAT vN)" on stdout for a good file,
// the reader's message (file, JSON path, expectation) on stderr for a bad one; exit 2
// when any file was bad. A CI job runs it on hand-written inputs first.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/report.h"
#include "core/runtime_costs.h"
#include "exec/layers/model.h"
#include "llm/job.h"
#include "llm/llm_plan_json.h"
#include "llm/plan_layout.h"

namespace pipescope::cli {

namespace {

// Reads `path` with the reader of its format; returns "FORMAT vN"; throws InputError.
std::string read_any(const std::string& path) {
  const JsonReader r = JsonReader::from_file(path);
  if (!r.json().is_object()) r.fail("expected a JSON object");
  const std::string format = r["format"].as_string();
  if (format == "pipescope.profile") {
    profile_from_json(r);
  } else if (format == "pipescope.hardware") {
    hardware_from_json(r);
  } else if (format == "pipescope.plan") {
    const Plan plan = plan_from_json(r);
    // a v2 plan's "layout" and a v3 plan's "job" are read by llm/, as simulate, run and export read them
    const std::optional<ParallelLayout> layout = plan_layout(plan);
    if (!plan_job(plan) && layout) {  // a v2 plan: its layout against the model its profile states
      const std::filesystem::path profile = std::filesystem::path(path).parent_path() / plan.profile;
      std::error_code ec;
      if (std::filesystem::is_regular_file(profile, ec)) check_layout_against_profile(*layout, plan, load_profile(profile.string()));
    }
  } else if (format == "pipescope.prediction" || format == "pipescope.measurement") {
    report_from_json(r);
  } else if (format == "pipescope.model") {
    exec::model_from_json(r);
  } else if (format == "pipescope.llm_plan") {
    llm_plan_result_from_json(r);
  } else if (format == "pipescope.runtime") {
    runtime_costs_from_json(r);
  } else {
    r["format"].fail("expected a format this command reads: pipescope.profile, pipescope.hardware, pipescope.plan, "
                     "pipescope.model, pipescope.prediction, pipescope.measurement, pipescope.llm_plan or "
                     "pipescope.runtime; got \"" + format + "\"");
  }
  return format + " v" + std::to_string(r["version"].as_int());
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("validate", "Read files with pipescope's own readers (profile, hardware, plan, "
                                                 "model, prediction, measurement, llm_plan); exit 2 naming the first "
                                                 "bad value");
  cmd->add_option("files", *files, "JSON files to read")->required();
  cmd->callback([files] {
    std::size_t bad = 0;
    for (const std::string& path : *files) {
      try {
        const std::string format = read_any(path);
        std::cout << path << ": ok (" << format << ")\n";
      } catch (const InputError& e) {
        std::cerr << "pipescope: error: " << e.what() << "\n";
        ++bad;
      }
    }
    if (bad > 0) throw InputError(std::to_string(bad) + " of " + std::to_string(files->size()) + " files refused");
  });
}

}  // namespace pipescope::cli
