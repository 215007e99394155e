// The flags that describe a plan, shared by every command that takes one
// (simulate, run, ...): either --plan FILE, or --profile with --stages/--microbatches/
// --schedule and friends. resolve() loads the files and builds the Plan.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/schedule.h"

namespace pipescope::cli {

struct PlanOptions {
  std::string plan_path;
  std::string profile_path;
  std::string hardware_path;
  int stages = 0;
  int microbatches = 0;
  std::string schedule = "1f1b";
  int chunks = 1;
  double microbatch_size = 0;
  bool recompute = false;
  std::string partition = "optimal";

  void add_to(CLI::App* cmd);
};

struct ResolvedPlan {
  Profile profile;
  Plan plan;
  Hardware hardware;
  Schedule schedule;
};

ResolvedPlan resolve(const PlanOptions& options);

// Writes `text` to `path` atomically, or to stdout when path is "-".
void write_output(const std::string& path, const std::string& text);

}  // namespace pipescope::cli
