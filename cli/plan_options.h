// The flags that describe a plan, shared by every command that takes one
// (simulate, run, ...): either --plan FILE, or --profile with --stages/--replicas/
// --microbatches/--schedule and friends. resolve() loads the files and builds the Plan.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/runtime_costs.h"
#include "core/schedule.h"

namespace pipescope::cli {

struct PlanOptions {
  std::string plan_path;
  std::string profile_path;
  std::string hardware_path;
  int stages = 0;
  int replicas = 1;
  int microbatches = 0;
  std::string schedule = "1f1b";
  std::string schedule_file;
  int chunks = 1;
  int max_inflight = 0;
  int64_t activation_budget = 0;  // --activation-budget (read when given: activation_budget_given)
  bool activation_budget_given = false;
  std::string optimizer_step;  // --optimizer-step (empty: the plan file's, else synchronized)
  std::string p2p;             // --p2p (empty: the plan file's, else the hardware file's, else overlapped)
  std::string runtime;         // --runtime FILE|NAME (empty: the ops alone; core/runtime_costs.h)
  std::string offload;         // --offload (empty: the plan file's, else none)
  std::string offload_fraction;  // --offload-fraction (empty: the plan file's, else 1)
  std::string host_capacity = "error";  // --host-capacity: error | report (over the host memory)
  double microbatch_size = 0;
  Recompute recompute = Recompute::None;  // --recompute: Full (a profile's plans run none or full)
  std::string partition = "optimal";
  int steps = 1;  // set by the command (simulate --steps, run --steps): steps an asynchronous schedule holds

  void add_to(CLI::App* cmd);
};

struct ResolvedPlan {
  Profile profile;  // what the plan's layer ranges index (make_plan may reorder a graph's layers)
  Plan plan;
  Hardware hardware;
  Schedule schedule;
  std::vector<int> layer_order;  // make_plan's reorder of the given profile (empty: none)
  P2p p2p = P2p::Overlapped;     // --p2p, else the runtime's, else p2p_of(plan, hardware)
  std::optional<RuntimeCosts> runtime;  // --runtime, else the plan file's "runtime"
};

// --p2p overlapped|blocking, the same for every command that takes it (core/p2p.h);
// `p2p` stays empty when the flag is not given.
void add_p2p_option(CLI::App* cmd, std::string& p2p);

// --runtime FILE|NAME, the same for every command that takes it (core/runtime_costs.h).
void add_runtime_option(CLI::App* cmd, std::string& runtime);
// The runtime --runtime names (none when empty), and the p2p it implies: --p2p when given
// (`p2p_flag`), else the runtime's, else `fallback`.
std::optional<RuntimeCosts> runtime_of(const std::string& runtime);
P2p p2p_with_runtime(const std::string& p2p_flag, const std::optional<RuntimeCosts>& runtime, P2p fallback);

// --offload none|all|selective and --offload-fraction F or F0,F1,... (core/offload.h), the
// same for every command that takes them; both stay empty when not given.
void add_offload_options(CLI::App* cmd, std::string& offload, std::string& fraction);
// `base` (a plan file's offload, or none) with the flags applied; throws InputError for a
// fraction without a policy that offloads.
Offload offload_with_flags(Offload base, const std::string& offload, const std::string& fraction);

ResolvedPlan resolve(const PlanOptions& options);

// Writes `text` to `path` atomically, or to stdout when path is "-".
void write_output(const std::string& path, const std::string& text);
// Several outputs, all or nothing (write_files_atomically); "-" goes to stdout last.
void write_outputs(const std::vector<std::pair<std::string, std::string>>& files);

// "cpu, cuda": the backends this build offers, for --help.
std::string backend_list();
// The backend spec for --backend B --dtype D [--sm-partition K] ("cuda:bf16:part=4");
// throws InputError for a dtype or partition the backend does not offer.
std::string backend_spec(const std::string& backend, const std::string& dtype, int partitions);

}  // namespace pipescope::cli
