// One LLM-scale training job, the one input every front door evaluates (llm-time,
// llm-memory, llm-plan's candidates, `simulate --plan` of a version 3 plan): the model (a
// transformer shape and where it came from), the cluster (a GPU file by name or path, and
// its node size), the layout (schedule included) and the framework. evaluate_job is the one
// function from a Job to its prediction: the step (llm/step_time.h, ZeRO traffic included)
// and each pipeline rank's memory per GPU by kind (llm/memory.h). Invariant: a Job written
// into a plan file (job_plan) and read back (plan_job) is the same job, so it evaluates to
// the identical step_ns and the identical bytes of each kind on each rank.
//   Job job{shape, "profiles/hf/llama-3-70b.json", {"h100-sxm", 8}, layout, Framework::Megatron};
//   JobReport r = evaluate_job(job, gpu);  // r.time.step_ns, r.memory.stages[k].activation_bytes
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.h"
#include "core/plan.h"
#include "llm/gpu_model.h"
#include "llm/layout.h"
#include "llm/layout_check.h"
#include "llm/memory.h"
#include "llm/step_time.h"

namespace pipescope {

// The hardware a job runs on: the GPU file (profiles/gpus/NAME.json, or a path) as the user
// named it, and its GPUs per node as it was when the job was planned (a reader checks the
// file still says so). The GPU count is the layout's t x cp x d x p.
struct JobCluster {
  std::string gpu;
  int gpus_per_node = 0;
  double memory_headroom_bytes = -1;  // kept free per GPU (--memory-headroom); < 0: the framework's reserve
};

struct Job {
  TransformerShape shape;    // vocabulary padded for layout.t (what is evaluated)
  std::string model_source;  // the Hugging Face config.json it came from; "" for Megatron's model flags
  // The vocabulary before padding (Megatron's --vocab-size, the config's vocab_size) and
  // --make-vocab-size-divisible-by: what a search of this job pads per t. 0: not recorded
  // (a plan written before they were), the shape's padded vocabulary stands for it.
  int vocab_size = 0;
  int vocab_divisible_by = 128;
  JobCluster cluster;
  ParallelLayout layout;     // validated for its GPUs and framework, the framework's overlap set
  Framework framework = Framework::Megatron;
};

// The bytes per GPU the job keeps free of `capacity` (its cluster's, else its framework's
// llm/framework.h reserve).
double job_headroom_bytes(const Job& job, double capacity);
// What a layout must fit under: `capacity` less job_headroom_bytes (the search's, simulate
// --plan --require-fit's, the exports' and the GUI's test).
double job_usable_bytes(const Job& job, double capacity);

struct JobReport {
  StepTime time;             // time.step_ns: pipeline + data-parallel tail + embedding sync + ZeRO traffic
  LlmMemory memory;          // per pipeline rank, per GPU, by kind (bytes)
};

// The one check of a job, whoever built it (flags, a plan file, the GUI's edits, an export to
// another framework): validate_layout for `gpus` GPUs under the job's framework, then
// everything the framework refuses of the layout (llm/framework.h's framework_refusal: its
// schedules, dimensions, shardings, recompute, precision, the overlap it runs, its rank order,
// its runtime), and, given the GPU file of the job's cluster, the cluster's: the node size
// the job was planned with, a headroom below the GPU's memory (headroom_refusal). The layout is
// replaced by its validated form with the overlap its framework always runs set
// (set_framework_overlap); `notes` gets what was changed, as the framework changes it.
// Throws InputError opening with the flag or the plan field it speaks of.
void validate_job(Job& job, int gpus, std::vector<std::string>* notes = nullptr, const GpuModel* cluster = nullptr);

// `walked`: llm_memory's cached in-flight counts (the search has them), or nullptr.
JobReport evaluate_job(const Job& job, const GpuModel& gpu, const InFlight* walked = nullptr);

// The plan llm-plan --out writes for the job: the pipeline llm/step_time.h simulates
// (stages, schedule, and the profile it names, here `profile_name`), the layout
// ("layout") and the rest of the job ("job"): a version 3 plan.
LlmPipeline job_plan(const Job& job, const GpuModel& gpu, const std::string& profile_name);
// Writes the job as a version 3 plan at `out` and its pipeline's profile beside it
// (<stem>.profile.json, which the plan names): what `llm-plan --out` and the GUI's File >
// Export plan write. `gpu_as_given`: the GPU file as the user named it; a file is written
// relative to the plan's folder, a name as it is. Throws InputError / RunError on I/O.
void write_job_plan(Job job, const GpuModel& gpu, const std::string& gpu_as_given, const std::string& out);
// The job of a version 3 plan with its cluster's GPU file (the name, or a path relative to the
// plan's folder), validated on it (validate_job with the GPU) and held to the plan's stages:
// what validate, simulate --plan, export, llm-memory --plan and the GUI read. nullopt for a plan
// without one (v1, v2). Throws InputError naming the file and the JSON path of a bad field.
struct PlannedJob {
  Job job;
  GpuModel gpu;
};
std::optional<PlannedJob> plan_job_on_gpu(const Plan& plan);
// plan_job_on_gpu's job.
std::optional<Job> plan_job(const Plan& plan);
// The "job" object of a version 3 plan (the layout is the plan's "layout"): {"model":
// {"source", "shape"}, "cluster": {"gpu", "gpus_per_node"}, "framework"}.
Json job_to_json(const Job& job);
// The fields as written, not yet validated (plan_job_on_gpu validates them on the cluster).
Job job_from_json(const JsonReader& job, const JsonReader& layout);
Json shape_to_json(const TransformerShape& shape);
// One pipeline rank's memory per GPU by kind: {"rank", "parameter_bytes", "gradient_bytes",
// "optimizer_bytes", "activation_bytes", "total_bytes"} (llm-plan --json, simulate --plan --json).
Json rank_memory_to_json(const RankMemory& memory);
TransformerShape shape_from_json(const JsonReader& reader);

}  // namespace pipescope
