// `pipescope simulate`: predict one training step of a plan; `pipescope schedule`:
// print a schedule's per-device op order as a text diagram.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/gates.h"
#include "cli/plan_options.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "sim/simulator.h"

namespace pipescope::cli {

// A Chrome trace takes about 1.5 KiB of memory and 350 bytes of file per op; past a
// million ops it is refused (viewers cannot open such traces anyway).
constexpr std::size_t kMaxTraceOps = 1'000'000;

void add_simulate_command(CLI::App& app) {
  struct Args {
    PlanOptions plan;
    bool json = false;
    std::string trace_path;
    std::string output_path;
    GateOptions gates;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("simulate", "Predict step time, throughput, bubble and memory of a plan");
  args->plan.add_to(cmd);
  cmd->add_flag("--json", args->json, "Print one JSON object instead of the table");
  cmd->add_option("--trace", args->trace_path, "Write a Chrome trace (Perfetto, chrome://tracing)");
  cmd->add_option("-o,--output", args->output_path, "Also write the prediction JSON to this file");
  args->gates.add_step_gates(cmd);
  cmd->callback([args] {
    if (!args->trace_path.empty() && args->trace_path == args->output_path && args->trace_path != "-") {
      throw InputError("--trace and --output name the same file \"" + args->trace_path + "\"");
    }
    args->gates.check(args->json, !args->plan.hardware_path.empty(),
                      {{"--output", args->output_path}, {"--trace", args->trace_path}});
    ResolvedPlan r = resolve(args->plan);
    if (!args->trace_path.empty() && r.schedule.num_ops() > kMaxTraceOps) {
      throw InputError("--trace: the schedule has " + std::to_string(r.schedule.num_ops()) +
                       " ops; a trace is limited to " + std::to_string(kMaxTraceOps) +
                       " (reduce --microbatches, or simulate without --trace)");
    }
    CostModel costs = build_cost_model(r.profile, r.plan, r.hardware);
    SimOptions options;
    options.model = r.profile.model;
    options.record_timeline = !args->trace_path.empty();
    StepReport report = simulate(r.schedule, costs, r.hardware, options);
    const StepFacts facts = step_facts(report, r.hardware.memory_bytes);
    const std::vector<GateResult> gates = args->gates.evaluate(facts);
    std::string json = with_gates(report_to_json(report), gates).dump(2) + "\n";
    // Both files or neither: a failure writing one leaves no output behind.
    std::vector<std::pair<std::string, std::string>> files;
    if (!args->output_path.empty()) files.emplace_back(args->output_path, json);
    if (!args->trace_path.empty()) files.emplace_back(args->trace_path, chrome_trace(report));
    for (auto& f : args->gates.junit_file("simulate", gates)) files.push_back(std::move(f));
    write_outputs(files);
    std::cout << result_text(args->gates, args->json, json, report_table(report), step_markdown("simulate", facts), gates);
    enforce(gates);
  });
}

void add_schedule_command(CLI::App& app) {
  struct Args {
    int stages = 0, microbatches = 0, chunks = 1;
    std::string schedule = "1f1b";
    bool recompute = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("schedule", "Print a schedule's per-device op order as a text diagram");
  cmd->add_option("--stages,-K", args->stages, "Pipeline stages K")->required();
  cmd->add_option("--microbatches,-M", args->microbatches, "Micro-batches M")->required();
  cmd->add_option("--schedule", args->schedule, "gpipe | 1f1b | interleaved | zb-h1")->capture_default_str();
  cmd->add_option("--chunks", args->chunks, "Model chunks per device (interleaved)")->capture_default_str();
  cmd->add_flag("--recompute", args->recompute, "Insert re-materialisation before each backward");
  cmd->callback([args] {
    if (static_cast<int64_t>(args->stages) * std::max(args->chunks, 1) * args->microbatches > 100000) {
      throw InputError("schedule: the diagram is limited to K x v x M <= 100000 cells");
    }
    Schedule s = make_schedule({parse_schedule_kind(args->schedule), args->stages, args->microbatches,
                                args->chunks, args->recompute});
    validate_schedule(s);
    std::cout << schedule_diagram(s);
  });
}

}  // namespace pipescope::cli
