// `pipescope run`: execute a plan for real (exec/) and report what it measured, in the
// prediction's format; `pipescope compare`: prediction vs measurement side by side.
// Under --transport mpi every rank runs this command; only rank 0 prints and writes.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/plan_options.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "exec/compare.h"
#include "exec/executor.h"
#include "exec/mpi_runner.h"
#include "sim/replay.h"
#include "sim/simulator.h"

namespace pipescope::cli {

namespace {

constexpr double kGradientTolerance = 1e-5;

StepReport simulate_plan(const ResolvedPlan& r, const CostModel& costs) {
  SimOptions options;
  options.model = r.profile.model;
  return simulate(r.schedule, costs, r.hardware, options);
}

}  // namespace

void add_run_command(CLI::App& app) {
  struct Args {
    PlanOptions plan;
    exec::RunOptions run;
    std::string optimizer = "adam";
    float lr = 1e-3f;
    std::string fault;
    bool json = false;
    bool compare = false;
    std::string trace_path, output_path;
    std::string dtype = "fp32";
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("run", "Execute a plan for real and measure step time, throughput, bubble and memory");
  a->plan.add_to(cmd);
  cmd->add_option("--backend", a->run.backend, "Backend to run on: " + backend_list())->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "fp32 | bf16 (bf16: cuda only; fp32 arithmetic)")->capture_default_str();
  cmd->add_option("--transport", a->run.transport,
                  "threads (one thread per stage replica) | mpi (one rank per stage replica: mpirun -np K*r pipescope run ...)")
      ->capture_default_str();
  cmd->add_option("--wait", a->run.wait,
                  "How a worker (one per stage replica) waits for its input: spin (keep the core busy) | block (sleep "
                  "until woken) | auto (spin when every worker on this machine has a core of its own)")
      ->capture_default_str();
  cmd->add_option("--pin", a->run.pin,
                  "threads transport: on (pin worker d's thread to core d) | off | auto (pin when every worker has a "
                  "core of its own); under MPI use mpirun's --bind-to")
      ->capture_default_str();
  cmd->add_option("--steps", a->run.steps, "Training steps to run")->capture_default_str();
  cmd->add_option("--warmup", a->run.warmup, "Warm-up steps left out of the measurement (default: 1 when --steps > 1)");
  cmd->add_option("--optimizer", a->optimizer, "sgd | adam")->capture_default_str();
  cmd->add_option("--lr", a->lr, "Learning rate")->capture_default_str();
  cmd->add_option("--timeout", a->run.timeout_s, "Seconds a stage waits for a message before it gives up")
      ->capture_default_str();
  cmd->add_flag("--check-gradients", a->run.check_gradients,
                "Compare step 0's gradients with one process running the whole mini-batch; print the largest "
                "relative error (fails above 1e-5, or when the replicas of a stage end with different parameters)");
  cmd->add_flag("--compare", a->compare, "Also simulate the plan and print predicted vs measured, with the step replayed through the simulator with the measured op times");
  cmd->add_flag("--json", a->json, "Print the measurement JSON instead of the table");
  cmd->add_option("--trace", a->trace_path, "Write a Chrome trace of the reported step");
  cmd->add_option("-o,--output", a->output_path, "Write the measurement JSON to this file");
  cmd->add_option("--inject-fault", a->fault, "Testing: make STAGE[/REPLICA]:OP:MICROBATCH fail (OP = forward, backward, ...); :crash kills the process, :drop loses the op's output message");
  cmd->callback([a] {
    a->run.backend = backend_spec(a->run.backend, a->dtype, 1);
    a->run.optimizer.kind = a->optimizer;
    a->run.optimizer.lr = a->lr;
    const bool mpi = a->run.transport == "mpi";
    try {
      if (!a->fault.empty()) a->run.fault = exec::parse_fault(a->fault);
      ResolvedPlan r = resolve(a->plan);
      exec::RunResult result = exec::run_plan(r.profile, r.plan, r.schedule, a->run);
      if (!result.is_root) return;
      std::string json = report_to_json(result.report).dump(2) + "\n";
      if (!a->output_path.empty()) write_output(a->output_path, json);
      if (!a->trace_path.empty()) write_output(a->trace_path, chrome_trace(result.report));
      std::cout << (a->json ? json : report_table(result.report));
      if (a->compare) {
        // The prediction, and the measured step replayed with its measured op times (sim/replay.h).
        const CostModel costs = build_cost_model(r.profile, r.plan, r.hardware);
        exec::Comparison c = exec::compare_reports(simulate_plan(r, costs), result.report);
        const StepReport replay = simulate_plan(r, with_measured_op_times(costs, result.report.timeline));
        c.values.insert(c.values.begin() + 1, {"step_time_ms, replayed", replay.step_ns / 1e6, result.report.step_ns / 1e6});
        std::cout << "\n" << exec::comparison_table(c)
                  << "(replayed: the simulator fed with the measured mean op times; its error is what the pipeline\n"
                     " adds to the op times: waits, transfers, executor overhead, ops that vary)\n";
      }
      if (a->run.check_gradients) {
        std::printf("largest relative gradient error: %.3g (limit %.0e)\n", result.max_gradient_error,
                    kGradientTolerance);
        if (!(result.max_gradient_error < kGradientTolerance)) {
          throw RunError("gradient check failed: largest relative error " + std::to_string(result.max_gradient_error));
        }
        if (!result.replicas_identical) throw RunError("replica check failed: the replicas of a stage ended with different parameters");
      }
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
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("compare", "Predicted vs measured step time, throughput, bubble and memory");
  cmd->add_option("prediction", a->prediction, "Prediction JSON (pipescope simulate -o)")->required();
  cmd->add_option("measurement", a->measurement, "Measurement JSON (pipescope run -o)")->required();
  cmd->add_flag("--json", a->json, "Print JSON instead of the table");
  cmd->add_option("-o,--output", a->output, "Also write the comparison JSON to this file");
  cmd->callback([a] {
    exec::Comparison c = exec::compare_reports(load_report(a->prediction), load_report(a->measurement));
    std::string json = exec::comparison_to_json(c).dump(2) + "\n";
    if (!a->output.empty()) write_output(a->output, json);
    std::cout << (a->json ? json : exec::comparison_table(c));
  });
}

}  // namespace pipescope::cli
