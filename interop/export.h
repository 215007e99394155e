// Turns a plan into what a training framework needs to run it: Megatron-LM command-line
// flags, a torch.distributed.pipelining setup, a DeepSpeed PipelineModule and config, or
// a torchtitan launch command. Invariant: an export either says exactly the plan (the same cuts, schedule,
// micro-batches, replication and re-materialisation) or throws InputError naming what
// the framework cannot express; it never approximates silently.
//   ExportResult r = export_plan(plan, profile, Framework::Megatron);
//   std::cout << r.text;            // flags, one per line
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/json_reader.h"
#include "core/plan.h"
#include "core/profile.h"
#include "llm/job.h"
#include "llm/layout.h"
#include "llm/layout_check.h"

namespace pipescope {

// What `export --to` writes. Each target runs the plans of one of llm/layout_check.h's
// Framework (the search's enum): torchtitan is torch's pipelining and FSDP2 launched by
// torchtitan's trainer, so it exports plans searched with --framework torch.
enum class ExportTarget : uint8_t { Megatron, Torch, DeepSpeed, Torchtitan };
struct ExportTargetInfo {
  ExportTarget target;
  const char* name;       // as --to spells it
  Framework framework;    // the framework whose plans it runs
  const char* label;      // in messages: "Megatron-LM", "torchtitan", ...
};
const ExportTargetInfo& export_target_info(ExportTarget target);
// The export target of a framework (Megatron, Torch, DeepSpeed: the same names).
ExportTarget export_target_of(Framework framework);
// A bad name throws InputError naming --to and the names it takes.
ExportTarget parse_export_target(const std::string& name);  // megatron | torch | deepspeed | torchtitan

// The framework versions whose argument definitions the exporters were checked against.
inline constexpr const char* kMegatronVersion = "Megatron-LM core_v0.15.0";
inline constexpr const char* kTorchVersion = "PyTorch 2.13 (torch.distributed.pipelining)";
inline constexpr const char* kDeepSpeedVersion = "DeepSpeed 0.18.9 - 0.19.x";
inline constexpr const char* kTorchtitanVersion = "torchtitan 0.3.0";

struct ExportResult {
  std::string text;  // what the user pastes or runs (flags, or a Python file)
  Json json;         // the same facts as one object (for --json and tests)
};

// What every exporter reads off a plan and its profile.
struct PlanShape {
  int positions = 1;                      // K (pipeline-parallel size)
  int chunks = 1;                         // v (virtual stages per position)
  int replicas = 1;                       // r (data-parallel size)
  int tensor_parallel = 1;                // t, from the profile's layer specs (1 when absent)
  int microbatches = 1;                   // M
  int64_t global_batch = 1;               // N samples per step
  int64_t microbatch_size = 1;            // N / (M r): samples per micro-batch per replica
  int64_t sequence = 0;                   // from the layer specs; 0 when unknown
  std::optional<ScheduleKind> schedule;   // nullopt: a schedule file (no framework class runs it)
  std::string schedule_name;              // as printed: to_string(schedule), or "file:NAME"
  Recompute recompute = Recompute::None;  // the plan's: None or Full (R ops: each stage keeps its input)
  std::optional<Dtype> dtype;              // the profile's, when it names one of Dtype's
  P2p p2p = P2p::Overlapped;              // the plan's (core/p2p.h; absent: overlapped)
  std::vector<std::pair<int, int>> ranges;  // per stage, model order: layers [first, end)
  std::vector<int> stage_position;          // per stage: its pipeline rank
  std::vector<char> roles;                  // per layer: 'E' embedding, 't' decoder layer, 'L' head
  std::vector<std::string> layer_names;
  std::vector<int> decoder_layers;          // per stage: its 't' layers
  // PyTorch pipelining's compute-only CSV of the plan's schedule: one row per rank,
  // cells "<stage><F|B|I|W><micro-batch>" in pipescope's op order (recompute ops are
  // left out: torch re-materialises inside the stage's checkpoint wrapper).
  std::vector<std::vector<std::string>> torch_csv;
  // A v2 plan's "layout" (llm/plan_layout.h), checked against the plan: p = K, v, d = r
  // (or r = 1: the plan is one of the d data-parallel pipelines, as llm-plan --out writes
  // it; replicas and global_batch then count all d), M, b = N / (M r), layers_per_chunk =
  // the decoder layers per stage, t = the profile's when it states one. When present it decides t, SP, cp, ep, sharding, recompute,
  // precision and the rank order of every export.
  std::optional<ParallelLayout> layout;
  int gpus_per_node = 8;  // for the rank groups an export states (a job's cluster's, else export --gpus-per-node)
  // A version 3 plan's job (llm/job.h: the model's shape and source, the cluster, the
  // framework it was planned for) and pipescope's prediction of it (evaluate_job on the
  // job's GPU file): the model flags an export writes, and the prediction its header states
  // so that a launch can be compared with it. nullopt for a plan without a job (v1, v2).
  std::optional<Job> job;
  std::optional<GpuModel> job_gpu;  // the job's GPU file (plan_job_on_gpu read the job on it)
  std::optional<JobReport> predicted;
  double gpu_memory_bytes = 0;  // the job's GPU file's memory per GPU (with predicted)
  // The framework the job was planned for when the export targets another one: the job
  // (framework, layout, prediction) is then the one validate_job accepted for the target.
  std::optional<Framework> planned_for;
  std::string plan_dir;  // the plan file's folder: a relative model source or GPU file is found beside it

  int stages() const { return static_cast<int>(ranges.size()); }
  int decoder_total() const;
  bool has_embedding_layer() const { return !roles.empty() && roles.front() == 'E'; }
  bool has_head_layer() const { return !roles.empty() && roles.back() == 'L'; }
  int world_size() const { return layout ? layout->gpus() : positions * replicas * tensor_parallel; }
};

// Throws InputError (naming the target's framework) for what no exporter can say:
// replication that differs between stages, a micro-batch that is not a whole number of
// samples, a non-chain model, an asynchronous schedule (no framework runs a step without
// a flush); for a v2 plan's layout, the model's checks every framework makes at launch
// (llm/plan_layout.h's check_layout_against_profile: t dividing the heads and KV groups,
// ep the experts, cp the sequence); a v3 plan's job made them when it was read.
// `gpus_per_node`: --gpus-per-node, nullopt when not given (a job's plan: its cluster's, else
// 8); a job planned on nodes of another size is refused naming both (the prediction is the job's).
PlanShape analyse_plan(const Plan& plan, const Profile& profile, ExportTarget target,
                       std::optional<int> gpus_per_node = std::nullopt);

// The rank groups of a layout as Megatron-Core's RankGenerator numbers them (order
// layout.order, ep from the expert generator): per group tp, cp, ep, dp, pp its size,
// stride, ranks per node of `gpus_per_node`, whether it crosses nodes, and the ranks of
// the group holding rank 0. Throws InputError naming "layout.order" for a bad order.
Json rank_groups_json(const ParallelLayout& layout, int gpus_per_node);
// What a layout field says that `framework` cannot: throws InputError("", "layout.<field>", why).
[[noreturn]] void refuse_layout(const std::string& field, const std::string& why);

// What pipescope predicted for the plan's job, as comment lines (each starting with
// `comment`): the step, throughput, each pipeline rank's peak per GPU by kind, and the rank
// that binds memory first with its margin under the job's headroom; and the same as JSON
// ({"step_ns", "gpu", "gpus", "global_batch", "ranks": [rank_memory_to_json...],
// "binding_rank", "headroom_bytes", "margin_bytes"}); "" / null without a job.
std::string predicted_lines(const PlanShape& shape, const std::string& comment);
Json predicted_json(const PlanShape& shape);

ExportResult export_megatron(const PlanShape& shape);
// The decoder layers of each stage (model order) of a --pipeline-model-parallel-layout in
// the form export_megatron writes: stages split by '|', each a run of E (embedding), t
// (a decoder layer, t*N for N) and L (loss); E only first, L only last. Throws InputError
// naming the flag for anything else (Megatron's parenthesised repeats are not read).
std::vector<int> megatron_layout_decoders(const std::string& layout);
// `csv`: the file loads torch_csv into a _PipelineScheduleRuntime (pipescope's exact op
// order) even where a schedule class exists; without a class it always does.
ExportResult export_torch(const PlanShape& shape, const std::string& plan_name, bool csv = false);
ExportResult export_deepspeed(const PlanShape& shape, const std::string& plan_name);
// `csv`: as export_torch's; the CSV is written beside the command (a here-document).
ExportResult export_torchtitan(const PlanShape& shape, const std::string& plan_name, bool csv = false);
ExportResult export_plan(const Plan& plan, const Profile& profile, ExportTarget target,
                         const std::string& plan_name = "plan.json", bool torch_csv = false,
                         std::optional<int> gpus_per_node = std::nullopt);
inline ExportResult export_plan(const Plan& plan, const Profile& profile, Framework framework,
                                const std::string& plan_name = "plan.json", bool torch_csv = false,
                                std::optional<int> gpus_per_node = std::nullopt) {
  return export_plan(plan, profile, export_target_of(framework), plan_name, torch_csv, gpus_per_node);
}

}  // namespace pipescope
