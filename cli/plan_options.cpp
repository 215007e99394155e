#include "cli/plan_options.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "core/atomic_file.h"
#include "core/dtype.h"
#include "core/error.h"
#include "exec/backends/backend.h"
#include "llm/plan_layout.h"
#include "core/cost_model.h"
#include "planner/plan_builder.h"
#include "planner/zero_bubble_search.h"

namespace pipescope::cli {

void add_p2p_option(CLI::App* cmd, std::string& p2p) {
  cmd->add_option("--p2p", p2p,
                  "overlapped (transfers on links beside compute) | blocking (a sender waits for its tensor to "
                  "arrive and a receive holds the device for the transfer: Megatron-LM's batched p2p, 1F1B or "
                  "--no-overlap-p2p-communication) | batched (a transfer starts when both ends have posted, at op "
                  "boundaries, and the receiver waits for it: torch's _batch_p2p, the zero-bubble runtime); default: "
                  "the plan file's \"p2p\", else the hardware file's, else overlapped")
      ->check(CLI::IsMember({"overlapped", "blocking", "batched"}));
}

void add_runtime_option(CLI::App* cmd, std::string& runtime) {
  cmd->add_option("--runtime", runtime,
                  "What the runtime spends around the ops, charged on each position's track: a pipescope.runtime file "
                  "(`pipescope calibrate` writes one from a measured run) or a bundled name (" +
                      bundled_runtime_names() + "); its p2p applies unless --p2p is given; default: the runtime a --plan file "
                      "names (\"runtime\"), else the ops alone. `plan -o` records it in the plan");
}

std::optional<RuntimeCosts> runtime_of(const std::string& runtime) {
  if (runtime.empty()) return std::nullopt;
  return load_runtime_costs(runtime);
}

P2p p2p_with_runtime(const std::string& p2p_flag, const std::optional<RuntimeCosts>& runtime, P2p fallback) {
  if (!p2p_flag.empty()) return parse_p2p(p2p_flag);
  if (runtime && runtime->p2p) return *runtime->p2p;
  return fallback;
}

void add_offload_options(CLI::App* cmd, std::string& offload, std::string& fraction) {
  cmd->add_option("--offload", offload,
                  "Activation offload to host memory (PipeOffload): none | all (every stash, --offload-fraction of "
                  "it, reloaded before its B) | selective (only stashes whose offload and reload fit before their B: "
                  "no step time lost); needs \"host_link\" in the hardware file; default: the plan file's, else none")
      ->check(CLI::IsMember({"none", "all", "selective"}));
  cmd->add_option("--offload-fraction", fraction,
                  "The share of each stash offloaded, in [0, 1]: one value, or one per stage comma-separated "
                  "(default 1)");
}

Offload offload_with_flags(Offload base, const std::string& offload, const std::string& fraction) {
  if (!offload.empty()) base.policy = parse_offload_policy(offload);
  if (!fraction.empty()) {
    if (!base.active()) throw InputError("--offload-fraction: give --offload all or selective with it");
    base.fraction = parse_offload_fraction(fraction);
  }
  return base;
}

void PlanOptions::add_to(CLI::App* cmd) {
  cmd->add_option("--plan", plan_path, "Plan file (pipescope.plan); replaces the flags below");
  cmd->add_option("--profile", profile_path,
                  "Profile file (pipescope.profile); with --plan it overrides the plan's profile");
  cmd->add_option("--hardware", hardware_path,
                  "Hardware file (pipescope.hardware); without it communication is free and memory unbounded");
  cmd->add_option("--stages,-K,--pipeline-model-parallel-size", stages,
                  "Pipeline stages K (positions; K x r devices with --replicas r); Megatron's "
                  "--pipeline-model-parallel-size");
  cmd->add_option("--replicas", replicas,
                  "Replicas r of every stage (data parallel inside the stage: K x r devices; each replica takes "
                  "b/r samples of every micro-batch)")
      ->capture_default_str();
  cmd->add_option("--microbatches,-M", microbatches, "Micro-batches M per step");
  cmd->add_option("--schedule", schedule, schedule_kind_names())->capture_default_str();
  cmd->add_option("--schedule-file", schedule_file,
                  "A schedule file instead of --schedule: pipescope.schedule JSON or PyTorch pipelining CSV "
                  "(K, M and the stage -> device map come from it; docs/schedules-as-data.md, Schedule files)");
  cmd->add_option("--chunks,--virtual-pipeline-model-parallel-size", chunks,
                  "Model chunks per device v (interleaved, looped-bfs, interleaved-zb; the V-shapes take 2); Megatron's "
                  "--virtual-pipeline-model-parallel-size")
      ->capture_default_str();
  cmd->add_option("--max-inflight", max_inflight,
                  "zb-auto: micro-batches alive per stage at once (max pending backward; default: the byte budget "
                  "the device memory leaves, or K without a memory size)");
  cmd->add_option_function<int64_t>(
      "--activation-budget",
      [this](const int64_t& bytes) {
        activation_budget = bytes;
        activation_budget_given = true;
      },
      "zb-auto: bytes of stash each device may hold at once (F's activations; after I what W still needs, the "
      "profile's weight_grad_bytes); default: what the device memory leaves after static bytes and transients");
  cmd->add_option("--optimizer-step", optimizer_step,
                  "synchronized (flush, then every stage steps: Megatron-LM, torch; the default) | post-validation "
                  "(each stage steps after its own last W or B and runs on into the next step, as the zero-bubble "
                  "runtime; with --steps N >= 3 the steady-state step shows it)")
      ->check(CLI::IsMember({"synchronized", "post-validation"}));
  add_p2p_option(cmd, p2p);
  add_runtime_option(cmd, runtime);
  add_offload_options(cmd, offload, offload_fraction);
  cmd->add_option("--host-capacity", host_capacity,
                  "error (a host peak over the hardware file's host_link memory_bytes or node_memory_bytes exits 2) | "
                  "report (only report it)")
      ->check(CLI::IsMember({"error", "report"}))
      ->capture_default_str();
  cmd->add_option("--microbatch-size,--micro-batch-size", microbatch_size,
                  "Samples per micro-batch b (default: the profile's first batch size); Megatron's --micro-batch-size");
  cmd->add_flag_callback("--recompute", [this] { recompute = Recompute::Full; },
                         "Re-materialise activations (keep only stage inputs)");
  cmd->add_option("--partition", partition,
                  "uniform | gpipe (least variance of stage cost) | optimal (slowest stage, memory-aware; "
                  "balanced = optimal)")
      ->capture_default_str();
}

namespace {

// --plan FILE: the plan as written, with its profile (the plan's, relative to the plan's
// folder, unless --profile overrides it).
void read_plan(const PlanOptions& o, ResolvedPlan& r) {
  if (!o.schedule_file.empty()) {
    throw InputError("--schedule-file: a plan names its schedule (\"schedule\": {\"file\": ...}); give --profile instead of --plan");
  }
  r.plan = load_plan(o.plan_path);
  std::string profile_path = o.profile_path;
  if (profile_path.empty()) {
    std::filesystem::path p(r.plan.profile);
    if (p.is_relative()) p = std::filesystem::path(o.plan_path).parent_path() / p;
    profile_path = p.string();
  }
  r.profile = load_profile(profile_path);
  check_plan_layers(r.plan, r.profile.num_layers(), r.profile.source);
  if (const std::optional<ParallelLayout> layout = plan_layout(r.plan)) {  // as `validate` reads it
    check_layout_against_profile(*layout, r.plan, r.profile);
  }
}

// --profile FILE with --stages, --microbatches, ...: the plan make_plan builds from the flags.
void plan_from_flags(const PlanOptions& o, ResolvedPlan& r) {
  if (o.profile_path.empty()) throw InputError("give --plan FILE, or --profile FILE with --stages and --microbatches");
  const bool file = !o.schedule_file.empty();
  if (o.stages < 1 && !file) throw InputError("--stages: expected a number of stages >= 1 (or give --plan)");
  if (o.microbatches < 1 && !file) throw InputError("--microbatches: expected a number of micro-batches >= 1");
  if (!(o.microbatch_size >= 0)) {
    throw InputError("--microbatch-size: expected a positive number of samples, got " + CLI::detail::to_string(o.microbatch_size));
  }
  r.profile = load_profile(o.profile_path);
  PlanChoice c;
  c.stages = o.stages;
  c.replicas = o.replicas;
  c.microbatches = o.microbatches;
  c.microbatch_size = o.microbatch_size;
  c.schedule = parse_schedule_kind(o.schedule);
  c.schedule_file = o.schedule_file;
  c.chunks = o.chunks;
  c.max_inflight = o.max_inflight;
  c.recompute = o.recompute;
  c.partition = parse_partition_kind(o.partition);
  c.profile_path = o.profile_path;
  if (!o.hardware_path.empty()) {
    r.hardware = load_hardware(o.hardware_path);
    const int64_t devices = static_cast<int64_t>(o.stages) * o.replicas;  // 0 with a schedule file: checked below
    if (devices > r.hardware.devices) {
      const std::string times = o.replicas > 1 ? " x --replicas " + std::to_string(o.replicas) : "";
      throw InputError("--stages " + std::to_string(o.stages) + times + " needs " + std::to_string(devices) +
                       " devices, but " + o.hardware_path + " has " + std::to_string(r.hardware.devices));
    }
  }
  c.hardware = o.hardware_path.empty() ? nullptr : &r.hardware;
  const std::optional<RuntimeCosts> runtime = runtime_of(o.runtime);  // the cut's memory counts what its I frees
  c.runtime = runtime ? &*runtime : nullptr;
  MadePlan made = make_plan(r.profile, c);
  r.plan = std::move(made.plan);
  r.profile = std::move(made.profile);  // the plan's ranges index it (a graph cut may reorder the layers)
  r.layer_order = std::move(made.layer_order);
}

// The hardware the plan runs on: --hardware, else ideal devices, as many as the plan names.
void settle_hardware(const PlanOptions& o, ResolvedPlan& r) {
  int needed = 0;
  for (const PlanStage& s : r.plan.stages) {
    for (int d : s.devices) needed = std::max(needed, d + 1);
  }
  if (o.hardware_path.empty()) r.hardware = Hardware::ideal(needed);
  if (!o.plan_path.empty() && !o.hardware_path.empty()) r.hardware = load_hardware(o.hardware_path);
  if (o.plan_path.empty() && needed > r.hardware.devices) {
    throw InputError("--stages " + std::to_string(r.plan.pipeline_devices()) + " needs " + std::to_string(needed) +
                     " devices, but " + o.hardware_path + " has " + std::to_string(r.hardware.devices));
  }
}

// The flags that hold for a plan file and for flags alike: --activation-budget,
// --optimizer-step, and what replicated stages refuse.
void apply_step_flags(const PlanOptions& o, Plan& plan) {
  const bool replicated = std::any_of(plan.stages.begin(), plan.stages.end(),
                                     [](const PlanStage& st) { return st.devices.size() > 1; });
  if (replicated && is_asynchronous(plan.schedule) && plan.schedule_file.empty()) {
    throw InputError("--replicas: " + to_string(plan.schedule) + " runs one replica per stage for now "
                     "(PipeDream's round-robin replication is not built); use --replicas 1");
  }
  if (o.activation_budget_given) {
    if (o.activation_budget < 0) {
      throw InputError("--activation-budget: expected a number of bytes >= 0, got " + std::to_string(o.activation_budget));
    }
    if (plan.schedule != ScheduleKind::ZeroBubbleAuto || !plan.schedule_file.empty()) {
      throw InputError("--activation-budget: only zb-auto takes a byte budget (the schedule is " + plan.schedule_name() + ")");
    }
    if (o.activation_budget == 0) {
      throw InputError("--activation-budget: 0 bytes is below one micro-batch's stash");
    }
    plan.activation_budget_bytes = o.activation_budget;
  }
  if (!o.optimizer_step.empty()) {
    plan.optimizer_step = parse_optimizer_step(o.optimizer_step);
    if (plan.optimizer_step == OptimizerStep::PostValidation && is_asynchronous(plan.schedule) &&
        plan.schedule_file.empty()) {
      throw InputError("--optimizer-step post-validation: " + to_string(plan.schedule) +
                       " updates its weights without a flush already; post-validation is for flushed schedules");
    }
  }
}

}  // namespace

ResolvedPlan resolve(const PlanOptions& o) {
  ResolvedPlan r;
  if (!o.plan_path.empty()) {
    read_plan(o, r);
  } else {
    plan_from_flags(o, r);
  }
  settle_hardware(o, r);
  apply_step_flags(o, r.plan);
  if (!o.p2p.empty()) r.plan.p2p = parse_p2p(o.p2p);
  // --runtime, else the runtime the plan file names (the one it was made with).
  if (o.runtime.empty() && !r.plan.runtime.empty()) {
    r.runtime = load_runtime_costs(runtime_path_of(r.plan), o.plan_path + ": runtime");
  } else {
    r.runtime = runtime_of(o.runtime);
    r.plan.runtime = o.runtime;
  }
  r.p2p = p2p_with_runtime(o.p2p, r.runtime, p2p_of(r.plan, r.hardware));
  if (r.runtime && r.runtime->p2p && o.p2p.empty()) r.plan.p2p = r.p2p;
  r.plan.offload = offload_with_flags(r.plan.offload, o.offload, o.offload_fraction);
  const std::string field = o.plan_path + ": offload";
  check_offload(r.plan.offload, static_cast<int>(r.plan.stages.size()), r.hardware,
                o.offload.empty() && !o.plan_path.empty() ? field : "--offload",
                o.offload_fraction.empty() && !o.plan_path.empty() ? field + ".fraction" : "--offload-fraction");
  r.schedule = schedule_for(r.plan, o.steps);
  if (r.plan.schedule == ScheduleKind::ZeroBubbleAuto && r.plan.schedule_file.empty()) {  // needs the costs
    r.schedule = schedule_for_costs(r.plan, build_cost_model(r.profile, r.plan, r.hardware), r.hardware,
                                    r.runtime ? &*r.runtime : nullptr);
  }
  validate_schedule(r.schedule);
  return r;
}

void write_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    return;
  }
  write_file_atomically(path, text);
}


std::string backend_list() {
  std::string out;
  for (const std::string& n : exec::backend_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string backend_spec(const std::string& backend, const std::string& dtype, int partitions) {
  const std::optional<Dtype> format = dtype_from_name(dtype);
  if (format != Dtype::Fp32 && format != Dtype::Bf16) {
    throw InputError("--dtype: expected fp32 or bf16, got \"" + dtype + "\"");
  }
  if (partitions < 1) throw InputError("--sm-partition: expected K >= 1, got " + std::to_string(partitions));
  const bool cuda = exec::is_cuda_backend(backend);
  if (!cuda) {
    if (format != Dtype::Fp32) throw InputError("--dtype " + dtype + ": the " + backend + " backend stores fp32 only (use --backend cuda)");
    if (partitions != 1) throw InputError("--sm-partition: only the cuda backend has SM partitions");
    return backend;
  }
  std::string spec = backend;
  if (format != Dtype::Fp32) spec += ":" + dtype;
  if (partitions > 1) spec += ":part=" + std::to_string(partitions);
  return spec;
}

}  // namespace pipescope::cli

namespace pipescope::cli {

void write_outputs(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::pair<std::string, std::string>> to_files;
  for (const auto& f : files) {
    if (f.first != "-") to_files.push_back(f);
  }
  write_files_atomically(to_files);
  for (const auto& f : files) {
    if (f.first == "-") std::cout << f.second;
  }
}

}  // namespace pipescope::cli
