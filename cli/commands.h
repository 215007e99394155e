// Each subcommand of `pipescope` registers itself on the CLI11 app; the callback it
// installs runs the command. Commands throw InputError / RunError; main() maps them to
// exit codes 2 and 3.
#pragma once

#include <CLI/CLI.hpp>

namespace pipescope::cli {

void add_simulate_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_plan_command(CLI::App& app);       // cli/cmd_plan.cpp (--profile: planner/; a model: cli/model_plan.h)
void add_sweep_command(CLI::App& app);
void add_run_command(CLI::App& app);      // cli/cmd_run.cpp (exec)
void add_compare_command(CLI::App& app);  // cli/cmd_run.cpp (exec)
void add_export_command(CLI::App& app);   // cli/cmd_export.cpp
void add_validate_command(CLI::App& app);  // cli/cmd_validate.cpp
void add_llm_time_command(CLI::App& app);  // cli/cmd_llm_time.cpp (llm/)
void add_llm_memory_command(CLI::App& app);  // cli/cmd_llm_memory.cpp (llm/)
void add_llm_plan_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);   // cli/cmd_calibrate.cpp (sim/calibrate.h)    // cli/cmd_plan.cpp: plan with a model, its old name

// Every option that takes a value, in every subcommand, refuses an empty one
// (`--offload-fraction ""`): "--flag: expected a value, got an empty string". Without it
// an empty string reads as "not given" (a string's default) or as 0. Call after the
// commands are added (main() and fuzz_cli).
void refuse_empty_values(CLI::App& app);

// The whole `pipescope` command line: every subcommand above, then refuse_empty_values and
// --version (cli/app.cpp). main() and fuzz/fuzz_cli.cpp parse this one app.
void add_all_commands(CLI::App& app);

}  // namespace pipescope::cli
