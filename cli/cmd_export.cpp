// `pipescope export --plan plan.json --to megatron|torch|deepspeed|torchtitan [-o FILE] [--json]`:
// writes what the framework needs to run the plan (interop/export.h). Exits 2, naming
// the reason, when the framework cannot express the plan.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/plan_options.h"
#include "core/error.h"
#include "interop/export.h"

namespace pipescope::cli {

void add_export_command(CLI::App& app) {
  struct Args {
    std::string plan_path, profile_path, target, output = "-";
    bool json = false;
    bool torch_csv = false;
    std::string p2p;
    std::optional<int> gpus_per_node;  // not given: a job's nodes, else 8
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("export", "Write a plan as Megatron-LM flags, a torch.distributed.pipelining setup, "
                                               "a DeepSpeed PipelineModule or a torchtitan launch command");
  cmd->add_option("--plan", a->plan_path, "Plan file (pipescope.plan), e.g. from `plan -o`")->required();
  cmd->add_option("--profile", a->profile_path, "Profile file; default: the plan's profile");
  cmd->add_option("--to", a->target, std::string("megatron (") + kMegatronVersion + " flags) | torch (" + kTorchVersion +
                                         ", a Python file) | deepspeed (" + kDeepSpeedVersion +
                                         ", a Python file) | torchtitan (" + kTorchtitanVersion +
                                         ", a torchrun command; a version 3 plan searched with --framework torch)")
      ->required();
  cmd->add_option("-o,--output", a->output, "Output file ('-' = stdout)")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON object with the same facts instead");
  cmd->add_flag("--torch-csv", a->torch_csv,
                "torch, torchtitan: run pipescope's exact op order from a CSV (_PipelineScheduleRuntime) even where a schedule class "
                "exists (always so for a schedule without one)");
  cmd->add_option("--gpus-per-node", a->gpus_per_node,
                  "GPUs per node, for the rank groups a plan with a layout states (which share a node); default: a "
                  "version 3 plan's job's (another is refused), else 8");
  add_p2p_option(cmd, a->p2p);
  cmd->callback([a] {
    const ExportTarget target = parse_export_target(a->target);
    Plan plan = load_plan(a->plan_path);
    if (!a->p2p.empty()) plan.p2p = parse_p2p(a->p2p);
    std::string profile_path = a->profile_path;
    if (profile_path.empty()) {
      std::filesystem::path p(plan.profile);
      if (p.is_relative()) p = std::filesystem::path(a->plan_path).parent_path() / p;
      profile_path = p.string();
    }
    Profile profile = load_profile(profile_path);
    const std::string plan_name = std::filesystem::path(a->plan_path).filename().string();
    ExportResult r;
    try {
      r = export_plan(plan, profile, target, plan_name, a->torch_csv, a->gpus_per_node);
    } catch (const InputError& e) {
      throw InputError("cannot export " + a->plan_path + " to " + a->target + ": " + e.what());
    }
    write_output(a->output, a->json ? r.json.dump() + "\n" : r.text);
  });
}

}  // namespace pipescope::cli
