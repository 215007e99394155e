// Mirrors cli/plan_options.cpp resolve() + cli/cmd_simulate.cpp, call for call.
#include "gui/models/plan_evaluation.h"

#include "planner/zero_bubble_search.h"

#include <algorithm>

#include "core/error.h"
#include "core/schedule.h"
#include "gui/models/job_model.h"
#include "llm/step_time.h"
#include "sim/simulator.h"

namespace pipescope::gui {

Hardware hardware_for(const PlanInputs& in, const Plan& plan) {
  if (in.hardware) return apply_what_if(*in.hardware, in.what_if);
  int needed = 0;
  for (const PlanStage& s : plan.stages) {
    for (int d : s.devices) needed = std::max(needed, d + 1);
  }
  return apply_what_if(Hardware::ideal(needed), in.what_if);
}

namespace {
// A job: evaluate_job's numbers, and the pipeline step_time simulates, with its timeline.
Evaluation evaluate_job_pipeline(const JobInputs& in, bool record_timeline) {
  LlmPipelineRun run = run_llm_pipeline(in.job.shape, in.job.layout, *in.gpu, record_timeline);
  Evaluation e;
  e.profile = std::make_shared<const Profile>(std::move(run.pipeline.profile));
  e.plan = std::move(run.pipeline.plan);
  e.costs = std::move(run.costs);
  e.schedule = std::move(run.schedule);
  e.report = std::move(run.report);
  e.p2p = P2p::Blocking;
  e.job = std::make_shared<const JobEvaluation>(evaluate_job_inputs(in));
  return e;
}
}  // namespace

PlanChoice plan_choice(PlanChoice c, const Plan& plan) {
  c.chunks = plan.chunks;
  c.stages = static_cast<int>(plan.stages.size()) / std::max(1, plan.chunks);
  c.replicas = plan.stages.empty() ? 1 : static_cast<int>(plan.stages.front().devices.size());
  c.microbatches = plan.microbatches;
  c.microbatch_size = plan.microbatch_size();
  c.schedule = plan.schedule;
  c.recompute = plan.recompute;
  return c;
}

Evaluation evaluate(const PlanInputs& in) {
  if (in.job) return evaluate_job_pipeline(*in.job, in.record_timeline);
  if (!in.profile) throw InputError("no profile loaded");
  Evaluation e;
  PlanChoice choice = in.choice;
  std::optional<Hardware> changed;
  if (in.hardware && in.what_if.active()) changed = apply_what_if(*in.hardware, in.what_if);
  choice.hardware = changed ? &*changed : in.hardware.get();  // the optimal partitioner reads links, speeds, memory
  choice.runtime = in.what_if.runtime.get();  // its cut counts what the runtime's I frees, as simulate --runtime's
  const int needed = choice.stages * choice.replicas;
  if (in.hardware && needed > in.hardware->devices) {
    throw InputError("--stages " + std::to_string(choice.stages) + " x --replicas " + std::to_string(choice.replicas) +
                     " needs " + std::to_string(needed) + " devices, but " + in.hardware->name + " has " +
                     std::to_string(in.hardware->devices));
  }
  e.profile = in.profile;
  if (in.plan) {
    e.plan = *in.plan;
  } else {
    MadePlan made = make_plan(*in.profile, choice);
    e.plan = std::move(made.plan);
    if (!made.layer_order.empty()) e.profile = std::make_shared<const Profile>(std::move(made.profile));
  }
  const Hardware hardware = hardware_for(in, e.plan);
  // An asynchronous schedule (pipedream, 2bw) shows three steps without a flush: the
  // fill, a steady-state step and the drain (docs/pipedream.md).
  e.costs = build_cost_model(*e.profile, e.plan, hardware);
  // zb-auto: the order searched on the plan's costs, the call `plan` and `simulate` make.
  e.schedule = e.plan.schedule == ScheduleKind::ZeroBubbleAuto && e.plan.schedule_file.empty()
                          ? schedule_for_costs(e.plan, e.costs, hardware, in.what_if.runtime.get())
                          : schedule_for(e.plan, kAsyncEvaluationSteps);
  validate_schedule(e.schedule);
  SimOptions options;
  options.model = e.profile->model;
  options.record_timeline = in.record_timeline;
  options.p2p = in.what_if.p2p;
  options.runtime = in.what_if.runtime.get();
  if (!is_asynchronous(e.plan.schedule) && !in.plan) e.plan.optimizer_step = in.what_if.optimizer_step;
  options.optimizer_step = e.plan.optimizer_step;
  if (e.plan.optimizer_step == OptimizerStep::PostValidation) options.steps = kAsyncEvaluationSteps;
  options.offload = e.plan.offload;  // a plan file's, or the one the search took for a candidate
  e.report = simulate(e.schedule, e.costs, hardware, options);
  e.p2p = options.p2p;
  e.runtime = in.what_if.runtime;
  return e;
}

}  // namespace pipescope::gui
