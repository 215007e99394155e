// A plan: how one training step of a profiled model is cut and run.
// Stages are model stages listed in model order; their layer ranges [first, end)
// tile [0, L) contiguously. The first K stages sit on the K pipeline positions in
// order; with v chunks there are K*v stages and every later stage uses the devices of
// one of the first K (the schedule's stage -> device map: s % K when interleaved, any
// map from a schedule file). A stage with several devices is replicated (data
// parallel inside the stage). The micro-batch size is batch_size / microbatches,
// which must divide evenly. The schedule is a built-in generator (`schedule`, `chunks`)
// or a schedule file (`schedule_file`, pipescope.schedule JSON or PyTorch CSV).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/json_reader.h"
#include "core/offload.h"
#include "core/p2p.h"
#include "core/recompute.h"
#include "core/schedule.h"

namespace pipescope {

struct PlanStage {
  int first_layer = 0;
  int end_layer = 0;
  std::vector<int> devices;
};

// Adam keeps two fp32-sized moments per parameter: 2 bytes of state per byte of
// parameters is the default.
inline constexpr double kDefaultOptimizerStateFactor = 2.0;

// Where a flushed step ends (core/op_rules.h): Synchronized, the flush and an optimizer
// step after which the next step starts on every device (Megatron-LM, torch: gradient
// clipping and the NaN/inf check need every stage's gradients); PostValidation, the
// zero-bubble runtime's (Qi et al. 2024, section 4): each position steps its optimizer
// right after its own last W (or B) of the step and starts the next step's ops as their
// inputs allow; the global check runs behind them and rolls a failed step back.
enum class OptimizerStep : uint8_t { Synchronized, PostValidation };
std::string to_string(OptimizerStep step);                   // "synchronized", "post-validation"
OptimizerStep parse_optimizer_step(const std::string& name);  // throws InputError naming --optimizer-step


struct Plan {
  std::string profile;  // path of the profile, relative to the plan file's folder
  int64_t batch_size = 1;
  int microbatches = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  std::string schedule_file;  // when set, the schedule comes from this file (path as given)
  int chunks = 1;
  int max_inflight = 0;  // zb-auto: micro-batches alive per position (0: K)
  // zb-auto: bytes of stash each position may hold at once (activations from F, and what
  // W still needs from I to W; 0: the default of planner/zero_bubble_search.h's
  // zero_bubble_budget: what the device memory leaves, or the count K without memory).
  int64_t activation_budget_bytes = 0;
  // None or Full: a profile's stages re-run whole (core/recompute.h); plan file: "recompute":
  // true (Full, the schedule's R ops) or false.
  Recompute recompute = Recompute::None;
  double optimizer_state_factor = kDefaultOptimizerStateFactor;
  OptimizerStep optimizer_step = OptimizerStep::Synchronized;  // plan file: "optimizer_step"
  std::optional<P2p> p2p;  // plan file: "p2p" (absent: the hardware's, else overlapped; core/p2p.h)
  Offload offload;         // plan file: "offload" (absent: none; core/offload.h)
  // plan file: "runtime", the runtime costs the plan was made with (core/runtime_costs.h):
  // a pipescope.runtime file relative to the plan's folder, or a bundled name; absent:
  // the ops alone. --runtime wins over it.
  std::string runtime;
  std::vector<PlanStage> stages;
  // Version 2: "layout", the LLM-scale parallel layout (t, cp, ep, d, p, v, sharding, ...)
  // kept as the file's raw JSON object; llm/plan_layout.h reads it (core never includes
  // llm/). A plan with a layout is written as version 2, one without as version 1.
  std::optional<Json> layout;
  // Version 3: "job", the rest of an LLM-scale job (model shape and source, cluster
  // reference, framework; llm/job.h reads it with the layout) kept as raw JSON. A plan
  // with a job is written as version 3; a job needs a layout.
  std::optional<Json> job;
  std::string source;

  int pipeline_devices() const { return static_cast<int>(stages.size()) / chunks; }
  double microbatch_size() const { return static_cast<double>(batch_size) / microbatches; }
  // `steps`: how many steps the op lists of an asynchronous kind hold (others: 1).
  ScheduleSpec schedule_spec(int steps = 1) const {
    return {schedule, pipeline_devices(), microbatches, chunks, has_r_ops(recompute), max_inflight,
            is_asynchronous(schedule) ? steps : 1};
  }
  std::vector<std::pair<int, int>> layer_ranges() const;
  // Model stage -> pipeline position: the first of the K first stages with its devices.
  std::vector<int> stage_positions() const;
  // "1f1b", or the schedule file's name.
  std::string schedule_name() const;
};

// The plan's schedule: generated from its kind, or read from its schedule file (then
// validated and checked against the plan: same stages, positions, micro-batches and
// re-materialisation). An asynchronous kind (pipedream, 2bw) holds `steps` steps
// without a flush; other kinds hold one step whatever `steps`. Throws InputError.
Schedule schedule_for(const Plan& plan, int steps = 1);

// The p2p a plan runs with on `hardware`: the plan's, else the hardware's, else overlapped.
P2p p2p_of(const Plan& plan, const Hardware& hardware);

// The plan's "runtime" as load_runtime_costs takes it: the file relative to the plan's
// folder when one is there, else the name as written (a bundled runtime); "" for none.
std::string runtime_path_of(const Plan& plan);

Plan load_plan(const std::string& path);
Plan plan_from_json(const JsonReader& reader);
Json plan_to_json(const Plan& plan);
// Checks the plan against a profile with `layers` layers (ranges tile [0, layers)).
void check_plan_layers(const Plan& plan, int layers, const std::string& profile_source);

}  // namespace pipescope
