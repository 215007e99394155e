// `pipescope simulate`: predict one training step of a plan (a version 3 plan's job:
// cli/simulate_job.h); `pipescope schedule`:
// write a schedule (built-in or read from a file) as a text diagram, JSON or PyTorch CSV.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/gates.h"
#include "cli/distribution_options.h"
#include "cli/plan_options.h"
#include "cli/simulate_job.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "core/schedule_io.h"
#include "sim/simulator.h"

namespace pipescope::cli {

// A Chrome trace takes about 1.5 KiB of memory and 350 bytes of file per op; past a
// million ops it is refused (viewers cannot open such traces anyway).
constexpr std::size_t kMaxTraceOps = 1'000'000;
// A text diagram wider than this is unreadable (JSON and CSV have no limit of their own).
constexpr int64_t kMaxDiagramCells = 100'000;

void add_simulate_command(CLI::App& app) {
  struct Args {
    PlanOptions plan;
    bool json = false;
    std::string trace_path;
    std::string output_path;
    GateOptions gates;
    DistributionOptions distribution;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("simulate", "Predict step time, throughput, bubble and memory of a plan");
  args->plan.add_to(cmd);
  const std::size_t plan_flags = cmd->get_options().size();  // --help and the plan options
  cmd->add_option("--steps", args->plan.steps,
                  "Training steps to simulate: pipedream and 2bw run them without a flush, the others with one; "
                  "> 1 adds the steady-state step time and throughput and the start-up cost")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of the table");
  cmd->add_option("--trace", args->trace_path, "Write a Chrome trace (Perfetto, chrome://tracing)");
  cmd->add_option("-o,--output", args->output_path, "Also write the prediction JSON to this file");
  // What shapes a plan (a version 3 plan's job refuses them): the plan options, --steps, --trace, the distribution.
  std::vector<const CLI::Option*> shaping;
  for (const CLI::Option* o : cmd->get_options()) shaping.push_back(o);
  shaping.resize(plan_flags + 1);  // + --steps
  shaping.push_back(cmd->get_option("--trace"));
  args->gates.add_step_gates(cmd);
  const std::size_t before_distribution = cmd->get_options().size();
  args->distribution.add_to(cmd);
  const std::vector<CLI::Option*> all = cmd->get_options();
  shaping.insert(shaping.end(), all.begin() + static_cast<std::ptrdiff_t>(before_distribution), all.end());
  cmd->callback([args, shaping] {
    if (!args->plan.plan_path.empty()) {
      const Plan plan = load_plan(args->plan.plan_path);
      if (plan.job) {
        JobSimulation run{args->plan.plan_path, args->output_path, args->json, {}};
        for (const CLI::Option* o : shaping) {
          if (o->count() > 0 && o->get_name() != "--plan") run.shaping_flags.push_back(o->get_name());
        }
        args->gates.check(args->json, true, {{"--output", args->output_path}});
        return simulate_job(plan, run, args->gates);
      }
    }
    if (!args->trace_path.empty() && args->trace_path == args->output_path && args->trace_path != "-") {
      throw InputError("--trace and --output name the same file \"" + args->trace_path + "\"");
    }
    args->gates.check(args->json, !args->plan.hardware_path.empty(),
                      {{"--output", args->output_path}, {"--trace", args->trace_path}});
    ResolvedPlan r = resolve(args->plan);
    const std::size_t traced_ops = r.schedule.num_ops() * (r.schedule.asynchronous() ? 1 : args->plan.steps);
    if (!args->trace_path.empty() && traced_ops > kMaxTraceOps) {
      throw InputError("--trace: the steps simulated hold " + std::to_string(traced_ops) +
                       " ops; a trace is limited to " + std::to_string(kMaxTraceOps) +
                       " (reduce --microbatches, or simulate without --trace)");
    }
    CostModel costs = build_cost_model(r.profile, r.plan, r.hardware);
    SimOptions options;
    options.model = r.profile.model;
    options.record_timeline = !args->trace_path.empty();
    options.steps = args->plan.steps;
    options.optimizer_step = r.plan.optimizer_step;
    options.p2p = r.p2p;
    options.runtime = r.runtime ? &*r.runtime : nullptr;
    options.offload = r.plan.offload;
    StepReport report = simulate(r.schedule, costs, r.hardware, options);
    if (args->plan.host_capacity == "error") check_host_capacity(report, r.hardware, "--host-capacity report");
    if (!r.layer_order.empty()) {
      report.notes.push_back("the optimal cut of this graph profile is contiguous in another topological order of its "
                             "layers: the stages' layer ranges index that order (plan -o writes the profile in it)");
    }
    const StepFacts facts = step_facts(report, r.hardware.memory_bytes);
    const std::vector<GateResult> gates = args->gates.evaluate(facts);
    Json out = report_to_json(report);
    std::string table_extra;
    if (args->distribution.enabled()) {
      JitterSpec spec = args->distribution.spec();
      spec.p2p = options.p2p;
      spec.runtime = options.runtime;
      if (args->distribution.from_profile()) spec.stage_cv = stage_cv_from_profile(r.profile, costs);
      const StepDistribution d = sample_steps(r.schedule, costs, r.hardware, spec);
      out["distribution"] = distribution_to_json(d, spec);
      table_extra = distribution_table(d);
    }
    std::string json = with_gates(std::move(out), gates).dump(2) + "\n";
    // Both files or neither: a failure writing one leaves no output behind.
    std::vector<std::pair<std::string, std::string>> files;
    if (!args->output_path.empty()) files.emplace_back(args->output_path, json);
    if (!args->trace_path.empty()) files.emplace_back(args->trace_path, chrome_trace(report));
    for (auto& f : args->gates.junit_file("simulate", gates)) files.push_back(std::move(f));
    write_outputs(files);
    std::cout << result_text(args->gates, args->json, json, report_table(report) + table_extra,
                             step_markdown("simulate", facts), gates);
    enforce(gates);
  });
}

void add_schedule_command(CLI::App& app) {
  struct Args {
    int stages = 0, microbatches = 0, chunks = 1, max_inflight = 0, steps = 1;
    std::string schedule = "1f1b";
    std::string schedule_file;
    std::string format = "text";
    std::string output_path = "-";
    bool recompute = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "schedule", "Write a schedule's per-device op order: a text diagram, pipescope.schedule JSON or PyTorch CSV");
  cmd->add_option("--stages,-K", args->stages, "Pipeline stages K (devices)");
  cmd->add_option("--microbatches,-M", args->microbatches, "Micro-batches M");
  cmd->add_option("--schedule", args->schedule, schedule_kind_names())->capture_default_str();
  cmd->add_option("--chunks", args->chunks, "Model chunks per device (interleaved, looped-bfs, interleaved-zb; the V-shapes take 2)")->capture_default_str();
  cmd->add_option("--max-inflight", args->max_inflight, "zb-auto: micro-batches alive per stage (unit times here)");
  cmd->add_flag("--recompute", args->recompute, "Insert re-materialisation (R) before each backward");
  cmd->add_option("--steps", args->steps, "pipedream, 2bw: steps the op lists hold without a flush")->capture_default_str();
  cmd->add_option("--schedule-file", args->schedule_file,
                  "Read this schedule file (JSON or PyTorch CSV) instead of generating one: converts between formats");
  cmd->add_option("--format", args->format, "text | json | csv (PyTorch pipelining's compute-only CSV)")
      ->check(CLI::IsMember({"text", "json", "csv"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output_path, "Write to this file instead of stdout")->capture_default_str();
  cmd->callback([args] {
    Schedule s;
    if (!args->schedule_file.empty()) {
      s = load_schedule_file(args->schedule_file);
      if (args->recompute) s = with_recompute(std::move(s));
    } else {
      if (args->format == "text" &&
          static_cast<int64_t>(args->stages) * std::max(args->chunks, 1) * args->microbatches * std::max(args->steps, 1) >
              kMaxDiagramCells) {
        throw InputError("schedule: the diagram is limited to K x v x M <= 100000 cells (use --format json or csv)");
      }
      if (args->stages < 1) throw InputError("--stages: expected K >= 1 (or give --schedule-file)");
      if (args->microbatches < 1) throw InputError("--microbatches: expected M >= 1 (or give --schedule-file)");
      const ScheduleKind kind = parse_schedule_kind(args->schedule);
      const int chunks = required_chunks(kind) == 2 && args->chunks == 1 ? 2 : args->chunks;  // V-shapes
      s = make_schedule({kind, args->stages, args->microbatches, chunks, args->recompute, args->max_inflight,
                         args->steps});
    }
    validate_schedule(s);
    std::string text;
    if (args->format == "json") {
      text = schedule_to_json(s).dump(1) + "\n";
    } else if (args->format == "csv") {
      text = schedule_to_csv(s);
    } else {
      if (static_cast<int64_t>(s.stages()) * s.microbatches() > kMaxDiagramCells) {
        throw InputError("schedule: the diagram is limited to K x v x M <= 100000 cells (use --format json or csv)");
      }
      text = schedule_diagram(s);
    }
    write_output(args->output_path, text);
  });
}

}  // namespace pipescope::cli
