// `pipescope calibrate`: fit the runtime terms (core/runtime_costs.h) to one measured run
// of a plan (sim/calibrate.h) and write them as a pipescope.runtime file that simulate,
// plan and run take with --runtime. It also predicts the measured run's plan with and
// without the terms and prints both beside the measured step, so the file says how well
// it explains the run it came from (that is not a validation: benchmarks/torch_pipelining.py
// --calibrate predicts other schedules and models with it).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/plan_options.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "sim/calibrate.h"
#include "sim/kineto_trace.h"
#include "sim/simulator.h"

namespace pipescope::cli {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[(v.size() - 1) / 2];  // the lower median: a step that ran
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string percent(double predicted, double measured) {
  return measured > 0 ? (predicted >= measured ? "+" : "") + fixed(100.0 * (predicted - measured) / measured, 1) + "%"
                      : "n/a";
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  struct Args {
    PlanOptions plan;
    std::vector<std::string> traces;
    std::string output_path, framework, schedule_class;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Fit the runtime's per-action, per-message and per-step costs to one measured run (a `pipescope_torch run "
      "--trace` trace, or torch.profiler's traces of it) of a plan; write them as a pipescope.runtime file for "
      "--runtime");
  cmd->add_option("--trace", a->traces,
                  "The measured run: the bridge's Chrome trace (pipescope_torch run --trace; docs/torch-run.md), or "
                  "torch.profiler's, one file per rank (export_chrome_trace; docs/runtime-costs.md), given as several "
                  "--trace files")
      ->required();
  a->plan.add_to(cmd);
  cmd->remove_option(cmd->get_option("--runtime"));  // calibrate writes a runtime; it takes none
  cmd->add_option("-o,--output", a->output_path, "Write the fitted pipescope.runtime file here")->required();
  cmd->add_option("--framework", a->framework,
                  "What ran, written into the file (default: the trace's process name)");
  cmd->add_option("--schedule-class", a->schedule_class,
                  "The framework's schedule class that ran (Schedule1F1B, ...), written into the file");
  cmd->add_flag("--json", a->json, "Print one JSON object (pipescope.calibration) instead of the table");
  cmd->callback([a] {
    const ResolvedPlan r = resolve(a->plan);
    const MeasuredTrace trace = load_measured_traces(a->traces);
    const CostModel costs = build_cost_model(r.profile, r.plan, r.hardware);
    CalibrationOptions options;
    options.loss_in_profile = is_loss_layer(r.profile.layers.back());
    options.framework = a->framework;
    options.schedule_class = a->schedule_class;
    Calibration cal = calibrate(trace, costs, options);
    const double measured = median(cal.step_ms);

    // The measured run's own plan, predicted with the ops alone and with the fitted terms.
    SimOptions sim;
    sim.record_timeline = false;
    sim.p2p = r.p2p;
    sim.optimizer_step = r.plan.optimizer_step;
    const auto step_ms = [&](const SimOptions& o) {
      return static_cast<double>(simulate(r.schedule, costs, r.hardware, o).step_ns) / 1e6;
    };
    const double ops_alone = step_ms(sim);
    sim.runtime = &cal.runtime;
    // The p2p semantics: --p2p's when given; else the one whose prediction of this run,
    // with the fitted terms, comes closer to its measured step (a discrete parameter of
    // the fit: the spans say how long a post and a wait took, not what a send waits for).
    if (a->plan.p2p.empty()) {
      std::string tried;
      double best = -1;
      for (P2p p : {P2p::Overlapped, P2p::Blocking, P2p::Batched}) {
        sim.p2p = p;
        const double ms = step_ms(sim);
        tried += std::string(tried.empty() ? "" : ", ") + to_string(p) + " " + fixed(ms, 3) + " ms";
        if (best < 0 || std::abs(ms - measured) < std::abs(best - measured)) {
          best = ms;
          cal.runtime.p2p = p;
        }
      }
      sim.p2p = *cal.runtime.p2p;
      cal.notes.push_back("p2p " + to_string(*cal.runtime.p2p) + " predicts this run closest (" + tried +
                          " against " + fixed(measured, 3) + " ms measured); --p2p fixes it instead");
    } else {
      cal.runtime.p2p = r.p2p;
    }
    const double calibrated = step_ms(sim);

    Json residuals = Json::object();
    for (const FitTerm& t : cal.terms) residuals[t.name] = json_number(std::round(t.residual_us * 10) / 10);
    cal.runtime.fit = {{"trace", trace.source},
                       {"steps", cal.step_ms.size()},
                       {"step_cv", cal.step_cv},
                       {"measured_step_ms", measured},
                       {"predicted_step_ms_ops_alone", ops_alone},
                       {"predicted_step_ms_calibrated", calibrated},
                       {"residual_us", residuals}};
    const Json runtime = runtime_costs_to_json(cal.runtime);
    write_output(a->output_path, runtime.dump(2) + "\n");

    if (a->json) {
      Json terms = Json::array();
      for (const FitTerm& t : cal.terms) {
        terms.push_back({{"name", t.name}, {"value_us", t.value_us}, {"samples", t.samples}, {"residual_us", t.residual_us}});
      }
      const Json out = {{"format", "pipescope.calibration"}, {"version", 1},     {"trace", trace.source},
                        {"runtime_file", a->output_path},     {"terms", terms},  {"step_ms", cal.step_ms},
                        {"step_cv", cal.step_cv},            {"measured_step_ms", measured},
                        {"predicted_step_ms", {{"ops_alone", ops_alone}, {"calibrated", calibrated}}},
                        {"runtime", runtime},                {"notes", cal.notes}};
      std::cout << out.dump(2) << "\n";
      return;
    }
    std::ostringstream o;
    o << "calibration of " << trace.source << " (" << cal.step_ms.size() << " timed steps, step times vary by "
      << fixed(cal.step_cv * 100, 1) << "%)\n\n";
    o << "term                              value     samples   residual (RMS)\n";
    for (const FitTerm& t : cal.terms) {
      char line[160];
      std::snprintf(line, sizeof line, "%-30s %10s us %8d %10s us\n", t.name.c_str(), fixed(t.value_us, 1).c_str(),
                    t.samples, fixed(t.residual_us, 1).c_str());
      o << line;
    }
    o << "\nthe measured plan: step " << fixed(measured, 3) << " ms measured (median); predicted " << fixed(ops_alone, 3)
      << " ms from the ops alone (" << percent(ops_alone, measured) << "), " << fixed(calibrated, 3)
      << " ms with the fitted terms (" << percent(calibrated, measured) << ")\n";
    for (const std::string& n : cal.notes) o << "note: " << n << "\n";
    o << "wrote " << a->output_path << " (pipescope.runtime: simulate, plan and run take it with --runtime)\n";
    std::cout << o.str();
  });
}

}  // namespace pipescope::cli
