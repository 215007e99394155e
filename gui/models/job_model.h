// A version 3 plan's job in the GUI (llm/job.h): the job the plan holds, its GPU file
// (found beside the plan first, as `simulate --plan` finds it), evaluate_job's report (the
// step and each pipeline rank's memory per GPU by kind) and the rows the left panel shows
// of its layout. Invariant: every number shown for a job is evaluate_job's, untouched: the
// step is report.time.step_ns, a rank's bytes of a kind are report.memory.stages[r]'s, the
// capacity is the GPU file's memory_bytes; the timeline is the one simulation step_time
// runs (run_llm_pipeline), whose step is report.time.pipeline_ns. Nothing here computes a
// time or a byte; an edit of the layout is validated by validate_job as the CLI's flags are.
//   JobInputs in = read_plan_job(load_plan("plan.json"));
//   JobEvaluation e = evaluate_job_inputs(in);  // e.report.time.step_ns
//   std::vector<LlmMemoryBar> bars = llm_memory_bars(e.report.memory);  // llm_memory_model.h
#pragma once

#include <QString>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/plan.h"
#include "gui/models/llm_memory_model.h"
#include "llm/job.h"
#include "llm/layout_search.h"
#include "planner/plan_builder.h"

namespace pipescope::gui {

struct JobInputs {
  Job job;
  std::shared_ptr<const GpuModel> gpu;
  std::string source;                // the plan file it came from (an edit keeps it)
  std::vector<std::string> notes;    // what validate_job changed on an edit, as Megatron would
};

struct JobEvaluation {
  JobInputs inputs;
  JobReport report;                  // evaluate_job(inputs.job, *inputs.gpu)
  int64_t capacity_bytes() const { return inputs.gpu->node.memory_bytes; }
  // the capacity less the job's headroom (llm/job.h job_headroom_bytes): what the search fits under
  double usable_bytes() const;
  bool fits(const RankMemory& rank) const;  // its total within usable_bytes (capacity 0: unbounded), as the search asks
  bool fits() const;                 // every rank's
};

// The job of a version 3 plan with its GPU file; nullopt for v1 / v2 plans. Throws
// InputError naming the plan file and the JSON path of a bad field, or the GPU file.
std::optional<JobInputs> read_plan_job(const Plan& plan);

JobEvaluation evaluate_job_inputs(const JobInputs& inputs);

// Writes the job as a version 3 plan at `path` with its profile beside (llm/job.h's
// write_job_plan, what llm-plan --out writes); a GPU file found beside the plan it came
// from is named relative to the new plan's folder.
void save_job_plan(const JobInputs& inputs, const std::string& path);

// What the left panel may change of a job's layout: the pipeline (K = p, v, schedule), M, b
// and d, and the job box's t, SP, cp, ep, recompute and sharding. A field left unset keeps
// the job's. The GPU count follows (t cp d p), the global batch too (b M d).
struct JobEdit {
  std::optional<int> p, v, microbatches, micro_batch, d, t, cp, ep;
  std::optional<ScheduleKind> schedule;
  std::optional<bool> sequence_parallel;
  std::optional<Recompute> recompute;
  std::optional<Sharding> sharding;
  bool empty() const;
};
// The job box's view of a layout: the dimensions the pipeline controls do not show.
struct JobLayoutChoice {
  int t = 1, cp = 1, ep = 1;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::None;
  Sharding sharding = Sharding::None;
};
JobLayoutChoice job_layout_choice(const Job& job);
// The job with `edit` applied and validated for its new GPU count (validate_job: the
// framework's refusals, word for word; InputError). Unchanged fields keep their values; a
// new t pads the vocabulary before padding (Job::vocab_size) again where the plan records it.
JobInputs edit_job(const JobInputs& base, const JobEdit& edit);

// The controls' view of a job: K = p, M, b, v, the schedule, recompute, r = d (the rest default).
PlanChoice job_choice(const Job& job);
// What the controls' `choice` (and the job box's `layout`, when given) change of `job`
// (only the fields that differ; v is the schedule's own when it fixes one, as the
// controls' choice() has it).
JobEdit job_edit(const Job& job, const PlanChoice& choice, const std::optional<JobLayoutChoice>& layout = std::nullopt);

// The search of the job's own question (the Plans tab with a job loaded): what `pipescope
// plan` with the job's model, GPU file, GPU count, global batch, framework, precision and
// rank order asks (its --out plan holds them), every dimension searched, the `top` best
// simulated. The vocabulary is the one before padding (Job::vocab_size) where the plan
// records it, else the shape's padded one (then padded no further than t divides it).
LlmSearchRequest job_search_request(const Job& job, int top);
// The job with a layout the search found (its candidate: layout and padded vocabulary),
// validated as an edit is; its source is kept.
JobInputs job_with_layout(const JobInputs& base, const LlmCandidate& candidate);

// The job's model, cluster and layout as (name, value) rows: model, GPUs, framework, t, SP,
// cp, ep, d, p, v, schedule, b, M, global batch, recompute, sharding, precision.
std::vector<std::pair<QString, QString>> job_layout_rows(const Job& job);

}  // namespace pipescope::gui
