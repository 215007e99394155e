// What a pipeline runtime spends around the ops a profile measures, as data: per action,
// per message, per step, and how it runs the split backward. One RuntimeCosts describes
// one framework and schedule class (torch.distributed.pipelining 2.13's Schedule1F1B on
// gloo, say), is written by `pipescope calibrate` from a measured run or bundled under
// profiles/runtimes/, and is charged by the simulator (sim/simulator.cpp) on the
// position's own track, where the timeline shows it as `runtime` events.
//
// Invariant: every term is a time the device spends in the runtime, not in an op, and
// none is counted twice: an action's term is the runtime's own code around the op
// (Python scheduling, hooks), a message's issue term is the call that posts the send or
// receive (waiting for the data is the simulator's p2p rule, never a term here), and a
// step's terms lie before the device's first op and after its last. All zero (the
// default) charges nothing: the simulator's prediction is then the ops alone.
//   RuntimeCosts rt = load_runtime_costs("torch-2.13-gloo.json");
//   options.runtime = &rt;
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/json_reader.h"
#include "core/p2p.h"
#include "core/schedule.h"

namespace pipescope {

// How a runtime's split backward differs from the profile's I and W.
enum class FirstStageSplit : uint8_t {
  AsProfiled,         // I and W as the profile measured them on every stage
  WeightPassRunsAll,  // the first stage's I does nothing and its W runs the whole backward
                      // (torch 2.13: stage_backward_input has no input gradient to compute
                      // on stage 0, so backward_weight_one_chunk runs the full backward)
};

struct RuntimeCosts {
  std::string framework;       // what ran: "torch.distributed.pipelining 2.13.0, gloo"
  std::string schedule_class;  // the class it was measured with ("Schedule1F1B"); "" = any
  // Per action, indexed by OpKind (F, B, I, W, R). action_ns: the runtime's code between
  // ops, before the op's input is waited for (it may overlap the wait); op_ns: what the
  // runtime adds to the op itself once its input is there (argument checks, hooks, the
  // autograd graph walk of a split backward, compute slowed by the rank beside it): the
  // op's measured time less the profile's; it may be negative (an op that ran faster than
  // profiled), and an op never takes less than 0.
  std::array<int64_t, 5> action_ns{};
  std::array<int64_t, 5> op_ns{};
  // The loss, on the last stage's device after each of its forwards (0: none, or the
  // profile has the loss as a layer: `pipescope_torch profile --loss`).
  int64_t loss_ns = 0;
  // Per message, on each end, for a tensor crossing devices: issue = ns + ns_per_byte x bytes.
  int64_t send_issue_ns = 0;
  double send_issue_ns_per_byte = 0;
  int64_t recv_issue_ns = 0;
  double recv_issue_ns_per_byte = 0;
  // The runtime's p2p semantics (core/p2p.h); absent: the plan's, else the hardware's.
  std::optional<P2p> p2p;
  // Per step, on every device: before its first op, and after its last (before the
  // optimizer step: gradient scaling, hooks); the last stage's device adds
  // last_stage_epilogue_ns (merging the micro-batches' outputs and losses).
  int64_t prologue_ns = 0;
  int64_t epilogue_ns = 0;
  int64_t last_stage_epilogue_ns = 0;
  // The optimizer step per parameter byte of the device's stages; 0: the profile's
  // optimizer_ms. When set it replaces the profile's (one optimizer step, not two).
  double optimizer_ns_per_parameter_byte = 0;
  // Added to each device's optimizer step (the runtime's own per-step cost of it: Python,
  // one call for the device's parameters where the profile timed one per layer); may be
  // negative, and a device's step never takes less than 0.
  int64_t optimizer_ns = 0;
  FirstStageSplit first_stage_split = FirstStageSplit::AsProfiled;
  // Memory: whether the input pass I frees what its W does not need (the profile's
  // weight_grad_bytes; core/op_rules.h). false: the runtime keeps the stage's whole graph
  // from I to W (torch 2.13's stage_backward_input hands W the graph it walked), so the
  // stash lives until W, all but the loss layer's (core/cost_model.h loss_bytes), which I
  // drops when it detaches the loss it walked from (_backward.py:262-264).
  bool input_pass_frees = true;
  // Memory: whether a hop between two stages on one device passes the output tensor
  // itself (torch 2.13's set_local_fwd_input detaches it, stage.py:410-412: the same
  // storage), so the later stage's first layer saves what the earlier stage's last layer
  // saved (Profile::shared_with_next_bytes) and the device holds it once
  // (StageCost::shared_with_previous_bytes). The later stage's backward comes first, so
  // its hold ends inside the earlier's.
  bool local_hop_shares_tensor = false;
  // Where each number comes from (a measured run, a table, a source line), by the
  // file's field name ("action_us", "message", ...). Written back as read.
  std::map<std::string, std::string> sources;
  // What `pipescope calibrate` reports of its fit (empty when written by hand):
  // the run it read, the residual, the samples. Written back as read.
  Json fit = Json::object();
  // Where load_runtime_costs read it: the file, and the bundled name when it is one
  // (both empty when built in code or read from JSON alone). Not written to the file.
  std::string path, bundled_name;

  bool any() const;  // charges something
  int64_t send_issue(int64_t bytes) const;
  int64_t recv_issue(int64_t bytes) const;
};

// What a stage's input pass I frees of its stash under `runtime`, given what the profile's
// rule frees (`freed`: activation - weight_grad_bytes) and the stash of the profile's loss
// layer when the stage ends with it (`loss_bytes`, else 0). Null runtime: `freed`. A
// first stage whose I runs nothing (weight_pass_runs_all) frees nothing; a runtime that
// keeps the graph (input_pass_frees false) frees only the loss's, which torch drops when
// it detaches the loss it walked from. The one statement the simulator, zb-auto's byte
// budget and the planner's stage model share.
int64_t input_pass_freed_bytes(int64_t freed, int64_t loss_bytes, bool first_stage, const RuntimeCosts* runtime);

// The file (`pipescope.runtime` version 1; schemas/runtime.schema.json), times in
// microseconds:
//   {"format": "pipescope.runtime", "version": 1, "framework": "...", "schedule_class": "...",
//    "action_us": {"F": 95, "B": 120, "I": 0, "W": 0, "R": 0}, "op_us": {"F": 30, "B": 60}, "loss_us": 0,
//    "message": {"send_issue_us": 40, "send_issue_us_per_mib": 0, "recv_issue_us": 35, "recv_issue_us_per_mib": 0},
//    "p2p": "blocking",
//    "step": {"prologue_us": 300, "epilogue_us": 200, "last_stage_epilogue_us": 100,
//             "optimizer_us": 0, "optimizer_us_per_mib": 0},
//    "split_backward": {"first_stage": "weight_pass_runs_all"},
//    "memory": {"input_pass_frees": false, "local_hop_shares_tensor": true},
//    "sources": {"action_us": "..."}, "fit": {...}}
// Every field but the header is optional (absent: 0 / as profiled); an unknown key, a
// negative or non-finite time is refused naming the file and the field.
RuntimeCosts runtime_costs_from_json(const JsonReader& r);
Json runtime_costs_to_json(const RuntimeCosts& rt);
// A path, or the name of a bundled file (profiles/runtimes/<name>.json).
// `field` names where it was given in errors ("--runtime", "plan.json: runtime").
RuntimeCosts load_runtime_costs(const std::string& path_or_name, const std::string& field = "--runtime");
// How a plan file at `plan_file` names `rt` in its "runtime" (core/plan.h): a bundled
// runtime by its name, a file by its path relative to the plan's folder.
std::string runtime_reference(const RuntimeCosts& rt, const std::string& plan_file);
// One line for a prediction's notes: what the runtime terms are and where they came from.
std::string runtime_note(const RuntimeCosts& rt);
// The bundled names, for --help and errors.
std::string bundled_runtime_names();

}  // namespace pipescope
