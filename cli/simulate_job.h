// `pipescope simulate --plan FILE` on a version 3 plan: the file holds the whole job
// (llm/job.h: model, GPU file, layout, framework), so it is evaluated by the one function
// llm-plan and llm-time use (evaluate_job), with no other flag: the same step (ns) and the
// same per-rank memory by kind (bytes) llm-plan printed for that layout, as a table or
// one pipescope.job_prediction JSON object. A plan-shaping flag given beside such a file
// is refused naming both (exit 2); gates (--require-fit, --max-bubble, ...) apply.
#pragma once

#include <string>
#include <vector>

#include "cli/gates.h"
#include "core/plan.h"

namespace pipescope::cli {

struct JobSimulation {
  std::string plan_path, output_path;
  bool json = false;
  std::vector<std::string> shaping_flags;  // plan-shaping flags given on the command line ("--microbatches")
};

// Throws InputError (a flag that contradicts the file, a bad job), GateError (a gate failed).
void simulate_job(const Plan& plan, const JobSimulation& run, const GateOptions& gates);

}  // namespace pipescope::cli
