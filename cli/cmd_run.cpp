// `pipescope run`: execute a plan for real (exec/) and report what it measured, in the
// prediction's format; `pipescope compare`: prediction vs measurement side by side.
// Under --transport mpi every rank runs this command; only rank 0 prints and writes.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/gates.h"
#include "cli/plan_options.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/compare.h"
#include "exec/runtime/executor.h"
#include "exec/transport/mpi_runner.h"
#include "sim/offload.h"
#include "sim/replay.h"
#include "sim/simulator.h"

namespace pipescope::cli {

namespace {

constexpr double kGradientTolerance = 1e-5;

// The prediction of what the run did: post-validation's steps back to back (as many as
// ran), under the run's p2p, with the plan's offload.
SimOptions simulate_plan(const ResolvedPlan& r, const exec::RunOptions& run) {
  SimOptions options;
  options.model = r.profile.model;
  options.optimizer_step = run.optimizer_step;
  options.p2p = run.p2p;
  options.runtime = r.runtime ? &*r.runtime : nullptr;  // the run's prediction with --runtime's terms
  options.offload = r.plan.offload;
  if (run.optimizer_step == OptimizerStep::PostValidation) options.steps = run.steps;
  return options;
}

StepReport simulate_plan(const ResolvedPlan& r, const CostModel& costs, const exec::RunOptions& run) {
  return simulate(r.schedule, costs, r.hardware, simulate_plan(r, run));
}

struct RunArgs {
  PlanOptions plan;
  exec::RunOptions run;
  std::string transport = "threads", wait = "auto", pin = "auto";  // parsed into run in the callback
  std::string optimizer = "adam";
  float lr = 1e-3f;
  std::string fault;
  bool json = false;
  bool compare = false;
  std::string trace_path, output_path;
  std::string dtype = "fp32";
  std::string clock = "steady";
  GateOptions gates;
};

// Prints what the run measured (one JSON object with --json: the measurement, with
// "comparison" and "gradient_check" when asked for), writes -o, --trace and --junit all
// or nothing, then fails on the gradient check (exit 3) and on the gates (exit 4).
void report_run(const RunArgs& a, const ResolvedPlan& r, const exec::RunResult& result) {
  Json object = report_to_json(result.report);
  std::string table = report_table(result.report);
  std::string markdown;
  if (a.compare) {
    // The prediction, and the measured step replayed with its measured op times (sim/replay.h).
    const CostModel costs = build_cost_model(r.profile, r.plan, r.hardware);
    Comparison c = compare_reports(simulate_plan(r, costs, a.run), result.report);
    const StepReport replay = simulate_plan(r, with_measured_op_times(costs, result.report.timeline), a.run);
    c.values.insert(c.values.begin() + 1, {"step_time_ms, replayed", replay.step_ns / 1e6, result.report.step_ns / 1e6});
    object["comparison"] = comparison_to_json(c);
    table += "\n" + comparison_table(c) +
             "(replayed: the simulator fed with the measured mean op times; its error is what the pipeline\n"
             " adds to the op times: waits, transfers, executor overhead, ops that vary)\n";
    markdown = comparison_markdown(c);
  }
  const bool gradients_ok = result.max_gradient_error < kGradientTolerance;
  if (a.run.check_gradients) {
    object["gradient_check"] = {{"max_relative_error", result.max_gradient_error},
                                {"limit", kGradientTolerance},
                                {"replicas_identical", result.replicas_identical},
                                {"passed", gradients_ok && result.replicas_identical}};
    char line[128];
    std::snprintf(line, sizeof line, "largest relative gradient error: %.3g (limit %.0e)\n", result.max_gradient_error,
                  kGradientTolerance);
    table += line;
    markdown += std::string("\n") + line;
  }
  const StepFacts facts = step_facts(result.report, r.hardware.memory_bytes);
  const std::vector<GateResult> gates = a.gates.evaluate(facts);
  const std::string json = with_gates(std::move(object), gates).dump(2) + "\n";
  std::vector<std::pair<std::string, std::string>> files = a.gates.junit_file("run", gates);
  if (!a.output_path.empty()) files.emplace_back(a.output_path, json);
  if (!a.trace_path.empty()) files.emplace_back(a.trace_path, chrome_trace(result.report));
  write_outputs(files);
  std::cout << result_text(a.gates, a.json, json, table, step_markdown("run", facts) + markdown, gates);
  if (a.run.check_gradients) {
    if (!gradients_ok) {
      throw RunError("gradient check failed: largest relative error " + std::to_string(result.max_gradient_error));
    }
    if (!result.replicas_identical) throw RunError("replica check failed: the replicas of a stage ended with different parameters");
  }
  enforce(gates);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Execute a plan for real and measure step time, throughput, bubble and memory");
  a->plan.add_to(cmd);
  cmd->add_option("--backend", a->run.backend, "Backend to run on: " + backend_list())->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "fp32 | bf16 (bf16: cuda only; fp32 arithmetic)")->capture_default_str();
  cmd->add_option("--transport", a->transport,
                  "threads (one thread per stage replica) | mpi (one rank per stage replica: mpirun -np K*r pipescope run ...)")
      ->capture_default_str();
  cmd->add_option("--wait", a->wait,
                  "How a worker (one per stage replica) waits for its input: spin (keep the core busy) | block (sleep "
                  "until woken) | auto (spin when every worker on this machine has a core of its own)")
      ->capture_default_str();
  cmd->add_option("--pin", a->pin,
                  "threads transport: on (pin worker d's thread to core d) | off | auto (pin when every worker has a "
                  "core of its own); under MPI use mpirun's --bind-to")
      ->capture_default_str();
  cmd->add_option("--steps", a->run.steps,
                  "Training steps to run (pipedream and 2bw: all in one op list without a flush)")
      ->capture_default_str();
  cmd->add_option("--warmup", a->run.warmup,
                  "Warm-up steps left out of the measurement (default: 1 when --steps > 1; pipedream and 2bw take "
                  "none: their steady-state step leaves out the first)")
      ->check(CLI::Range(0, kMaxRounds));  // a negative value is an error, not the default (-1)
  cmd->add_option("--optimizer", a->optimizer, "sgd | adam")->capture_default_str();
  cmd->add_option("--lr", a->lr, "Learning rate")->capture_default_str();
  cmd->add_option("--timeout", a->run.timeout_s, "Seconds a stage waits for a message before it gives up")
      ->capture_default_str();
  cmd->add_flag("--check-gradients", a->run.check_gradients,
                "Compare step 0's gradients with one process running the whole mini-batch; print the largest "
                "relative error (fails above 1e-5, or when the replicas of a stage end with different parameters)");
  cmd->add_flag("--compare", a->compare, "Also simulate the plan and print predicted vs measured, with the step replayed through the simulator with the measured op times");
  cmd->add_flag("--json", a->json,
                "Print one JSON object instead of the table: the measurement, with \"comparison\" (--compare) and "
                "\"gradient_check\" (--check-gradients)");
  cmd->add_option("--trace", a->trace_path, "Write a Chrome trace of the reported step");
  cmd->add_option("-o,--output", a->output_path, "Write the measurement JSON (the object --json prints) to this file");
  cmd->add_option("--clock", a->clock,
                  "steady (measure) | model (deterministic time: every op, transfer and optimizer step takes the cost "
                  "model's time on --hardware, replayed by the real workers; threads transport, no replicas)")
      ->check(CLI::IsMember({"steady", "model"}))
      ->capture_default_str();
  cmd->add_option("--inject-fault", a->fault, "Testing: make STAGE[/REPLICA]:OP:MICROBATCH fail (OP = forward, backward, ...); :crash kills the process, :drop loses the op's output message");
  a->gates.add_step_gates(cmd);
  cmd->callback([a] {
    if (!a->trace_path.empty() && a->trace_path == a->output_path && a->trace_path != "-") {
      throw InputError("--trace and --output name the same file \"" + a->trace_path + "\"");
    }
    a->gates.check(a->json, !a->plan.hardware_path.empty(), {{"--output", a->output_path}, {"--trace", a->trace_path}});
    a->run.backend = backend_spec(a->run.backend, a->dtype, 1);
    a->run.optimizer.lr = a->lr;
    const bool mpi = a->transport == "mpi";
    try {
      a->run.transport = exec::parse_transport(a->transport);
      a->run.wait = exec::parse_wait_mode(a->wait);
      a->run.pin = exec::parse_pin_mode(a->pin);
      a->run.optimizer.kind = exec::parse_optimizer_kind(a->optimizer);
      if (!a->fault.empty()) a->run.fault = exec::parse_fault(a->fault);
      a->plan.steps = a->run.steps;  // pipedream and 2bw: the schedule holds every step (no flush)
      ResolvedPlan r = resolve(a->plan);
      a->run.optimizer_step = r.plan.optimizer_step;
      if (r.p2p == P2p::Batched) {
        throw InputError("--p2p batched: pipescope's executor posts each transfer overlapped or blocking; batched is "
                         "a framework runtime's semantics (simulate and plan predict it)");
      }
      a->run.p2p = r.p2p;
      if (r.plan.offload.active()) {  // the stashes the prediction offloads (one decision: sim/offload.h)
        const CostModel costs = build_cost_model(r.profile, r.plan, r.hardware);
        a->run.offload = exec::OffloadRun{r.plan.offload.policy, *r.hardware.host_link,
                                          offload_decision(r.schedule, costs, r.hardware, simulate_plan(r, a->run))};
      }
      if (a->clock == "model") a->run.model_time = r.hardware;
      exec::RunResult result = exec::run_plan(r.profile, r.plan, r.schedule, a->run);
      if (!result.is_root) return;
      if (r.hardware.host_link) {
        result.report.host_memory_limit_bytes = r.hardware.host_link->memory_bytes;
        result.report.host_node_memory_limit_bytes = r.hardware.host_link->node_memory_bytes;
      }
      if (a->plan.host_capacity == "error") check_host_capacity(result.report, r.hardware, "--host-capacity report");
      report_run(*a, r, result);
    } catch (const GateError&) {
      throw;  // every rank has finished; the gates are rank 0's verdict on the result
    } catch (const std::exception& e) {
      if (!mpi || !exec::mpi_active()) throw;
      // A failed MPI run ends the whole job, so that no rank is left waiting.
      const bool input = dynamic_cast<const InputError*>(&e) != nullptr;
      std::cerr << "pipescope: " << (input ? "error: " : "run failed: ") << e.what() << "\n" << std::flush;
      exec::abort_mpi_job(input ? 2 : 3);
      throw;
    }
  });
}

void add_compare_command(CLI::App& app) {
  struct Args {
    std::string prediction, measurement, output;
    bool json = false;
    GateOptions gates;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("compare", "Predicted vs measured step time, throughput, bubble and memory");
  cmd->add_option("prediction", a->prediction, "Prediction JSON (pipescope simulate -o)")->required();
  cmd->add_option("measurement", a->measurement, "Measurement JSON (pipescope run -o)")->required();
  cmd->add_flag("--json", a->json, "Print JSON instead of the table");
  cmd->add_option("-o,--output", a->output, "Also write the comparison JSON to this file");
  a->gates.add_compare_gates(cmd);
  cmd->callback([a] {
    a->gates.check(a->json, false, {{"--output", a->output}});
    Comparison c = compare_reports(load_report(a->prediction), load_report(a->measurement));
    const std::vector<GateResult> gates = a->gates.evaluate(c);
    std::string json = with_gates(comparison_to_json(c), gates).dump(2) + "\n";
    std::vector<std::pair<std::string, std::string>> files = a->gates.junit_file("compare", gates);
    if (!a->output.empty()) files.emplace_back(a->output, json);
    write_outputs(files);
    const std::string markdown = "### pipescope compare: " + a->prediction + " vs " + a->measurement + "\n" +
                                 comparison_markdown(c);
    std::cout << result_text(a->gates, a->json, json, comparison_table(c), markdown, gates);
    enforce(gates);
  });
}

}  // namespace pipescope::cli
