// The `pipescope` app: its subcommands in the order --help lists them. main() and the
// fuzz target over the command line (fuzz/fuzz_cli.cpp) both build it here, so what is
// fuzzed is what users run.
#include "cli/commands.h"

namespace pipescope::cli {

void add_all_commands(CLI::App& app) {
  app.require_subcommand(1);
  app.set_version_flag("--version", "pipescope 0.1.0");
  add_simulate_command(app);
  add_schedule_command(app);
  add_profile_command(app);
  add_plan_command(app);
  add_sweep_command(app);
  add_run_command(app);
  add_compare_command(app);
  add_export_command(app);
  add_validate_command(app);
  add_llm_time_command(app);
  add_llm_memory_command(app);
  add_llm_plan_command(app);
  add_calibrate_command(app);
  refuse_empty_values(app);
}

}  // namespace pipescope::cli
