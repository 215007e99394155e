// One evaluation of a plan, made of exactly the library calls `pipescope simulate`
// makes: make_plan -> make_schedule -> validate_schedule -> build_cost_model ->
// simulate; or, for a version 3 plan's job, the calls `simulate --plan` makes
// (evaluate_job, gui/models/job_model.h) with its pipeline simulated once more for the
// timeline (run_llm_pipeline). The GUI adds no planning logic of its own; every view
// shows an Evaluation.
//   PlanInputs in{profile, hardware, {.stages = 4, .microbatches = 8}};
//   Evaluation e = evaluate(in);   // throws InputError for an impossible plan
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/report.h"
#include "gui/models/what_if.h"
#include "planner/plan_builder.h"

namespace pipescope::gui {

struct JobInputs;
struct JobEvaluation;

struct PlanInputs {
  std::shared_ptr<const Profile> profile;  // with `plan` set: the profile its ranges index
  std::shared_ptr<const Hardware> hardware;  // null: Hardware::ideal (as the CLI without --hardware)
  PlanChoice choice;
  bool record_timeline = true;
  // Set: this plan as it is (a candidate of the plans view, partition included);
  // `choice` then only names it. Unset: make_plan(profile, choice).
  std::optional<Plan> plan;
  // Applied to the hardware (the file's, or ideal) before planning; its optimizer step
  // replaces the plan's unless `plan` is set (a candidate keeps the search's), its p2p
  // mode is simulated.
  WhatIf what_if;
  // Set: this job is evaluated (evaluate_job) and everything above is ignored.
  std::shared_ptr<const JobInputs> job;
};

struct Evaluation {
  // What plan's layer ranges index: the inputs' profile, or its layers reordered by the
  // optimal cut of a graph profile (make_plan); views show layers through it.
  std::shared_ptr<const Profile> profile;
  Plan plan;
  CostModel costs;
  Schedule schedule;  // what was simulated (zb-auto: searched on the costs; async: 3 steps)
  StepReport report;  // post-validation: 3 steps, ranked by report.ranked_step_ns()
  P2p p2p = P2p::Overlapped;  // how it was simulated (the what-if's; the distribution samples the same)
  std::shared_ptr<const RuntimeCosts> runtime;  // the what-if's runtime costs (null: the ops alone), sampled the same
  // A job's evaluation (null for a profile's plan): its step and memory are these, not the
  // report's (which is its pipeline only: report.step_ns == job->report.time.pipeline_ns).
  std::shared_ptr<const JobEvaluation> job;
};

Evaluation evaluate(const PlanInputs& inputs);

// `base` naming a plan file's plan (the controls show it): K, M, micro-batch size,
// schedule, v, re-materialisation and r from the plan.
PlanChoice plan_choice(PlanChoice base, const Plan& plan);

// The hardware a plan runs on: the given file, or ideal hardware with enough
// devices, with the what-if applied.
Hardware hardware_for(const PlanInputs& inputs, const Plan& plan);

}  // namespace pipescope::gui
