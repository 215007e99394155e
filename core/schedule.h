// A Schedule is data: the order in which each device runs its ops in one training
// step, and the stage -> device map. The simulator, the planner and every executor
// worker walk the same per-device op lists in order; a Schedule is built once (by a
// generator, or read from a file) and never modified afterwards. What an op waits
// for, charges and frees in memory, costs and sends is stated once, in
// core/op_rules.h; nothing here or elsewhere restates it. The map may have any shape:
// Megatron's interleaving puts stage s on device s % K, a V-shape puts stages d and
// 2K-1-d on device d (each kind's facts: core/schedule_kinds.h). Each (stage,
// micro-batch) runs F, then either B (whole backward) or I then W (split backward),
// chosen per op; R (recompute) when `r_ops` is set (a plan's recompute == Recompute::Full,
// core/recompute.h).
//   Schedule s = make_schedule({ScheduleKind::OneFOneB, 4, 32});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule_kinds.h"

namespace pipescope {

enum class OpKind : uint8_t {
  Forward,         // F
  Backward,        // B: input and weight gradients together
  BackwardInput,   // I: input gradient only (split backward)
  BackwardWeight,  // W: weight gradient (split backward)
  Recompute,       // R: re-run the stage's forward before its backward
};

std::string to_string(WeightUpdate update);  // "flush", "stash", "double-buffer"
std::string to_string(OpKind kind);         // "forward", "backward", ...
char op_letter(OpKind kind);                // F B I W R (PyTorch's letters; R = recompute)
bool parse_op_letter(char letter, OpKind& kind);  // false for any other letter

struct Op {
  OpKind kind;
  int stage;       // model stage (virtual stage under interleaving)
  int microbatch;
  bool operator==(const Op&) const = default;
};

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  int positions = 1;     // pipeline depth K
  int microbatches = 1;  // M
  int chunks = 1;        // v, model chunks per device (interleaved; 2 for zb-v and dualpipev)
  bool r_ops = false;    // R ops present: a plan's recompute == Recompute::Full (core/recompute.h)
  int max_inflight = 0;  // zb-auto: micro-batches alive per device (0: K, 1F1B's first stage)
  int steps = 1;         // pipedream, 2bw: steps the op lists run without a flush (others: 1)
};

struct Schedule {
  std::string name = "custom";                 // "1f1b", "zb-h1", a file's name: for reports only
  int num_microbatches = 1;                    // micro-batches in the op lists: M x steps
  // R ops present (a plan's recompute == Recompute::Full, core/recompute.h): F keeps only
  // the stage input; R(s,m) re-runs it before the first backward of (s,m).
  bool r_ops = false;
  WeightUpdate weight_update = WeightUpdate::Flush;
  int steps = 1;                               // training steps the op lists hold (> 1 only without a flush)
  std::vector<int> stage_position;             // model stage -> pipeline position
  std::vector<std::vector<Op>> position_ops;   // per position, in execution order
  // dualpipev: the B ops that run overlapped with the F just before them on their device
  // (DualPipe's F&B pairs), sorted by (stage, micro-batch). The simulator charges such a
  // pair F + B - overlap (core/cost_model.h's fb_overlap_ns); a mark whose B does not
  // follow an F (re-materialisation puts R between them) runs back to back. Kept in
  // PyTorch's CSV as "(aFm;bBn)OVERLAP_F_B" cells (as ScheduleDualPipeV writes them),
  // not in pipescope.schedule JSON. Empty for every other schedule.
  std::vector<Op> overlapped_backwards;

  int positions() const { return static_cast<int>(position_ops.size()); }
  int stages() const { return static_cast<int>(stage_position.size()); }
  int microbatches() const { return num_microbatches; }
  // Micro-batches per training step (M); micro-batch n belongs to step n / M.
  int step_microbatches() const { return num_microbatches / steps; }
  int step_of(int microbatch) const { return microbatch / step_microbatches(); }
  bool asynchronous() const { return weight_update != WeightUpdate::Flush; }
  // Stages per device (Megatron's v) when every device holds as many; else 0.
  int chunks() const;
  // The stages on `device`, in model order.
  std::vector<int> stages_of(int device) const;
  // Whether any op is an I or a W (reports say so when the profile has no split times).
  bool has_split_backward() const;
  std::size_t num_ops() const;
};

// Builds the schedule; throws InputError when the spec is impossible (e.g.
// interleaved with M not a multiple of K). The generators live in core/schedules/, one
// file per family.
Schedule make_schedule(const ScheduleSpec& spec);
// core/schedules/gpipe_1f1b.cpp
Schedule make_gpipe(int devices, int microbatches, bool r_ops = false);
Schedule make_1f1b(int devices, int microbatches, bool r_ops = false);
// core/schedules/interleaved.cpp: Megatron-LM's interleaved 1F1B.
Schedule make_interleaved(int devices, int microbatches, int chunks, bool r_ops = false);
// core/schedules/zero_bubble.cpp: the zero-bubble family.
Schedule make_zb_h1(int devices, int microbatches, bool r_ops = false);
Schedule make_zb_h2(int devices, int microbatches, bool r_ops = false);
Schedule make_zb_v(int devices, int microbatches, bool r_ops = false);
// core/schedules/looped.cpp: PyTorch's ScheduleLoopedBFS and ScheduleInterleavedZeroBubble
// (v chunks per position, stage c K + d on position d); interleaved-zb needs M a multiple
// of max(1, M / K).
Schedule make_looped_bfs(int devices, int microbatches, int chunks, bool r_ops = false);
Schedule make_interleaved_zb(int devices, int microbatches, int chunks, bool r_ops = false);
// core/schedules/v_shape.cpp: the controllable-memory V-shapes (Qi et al., NeurIPS 2024).
Schedule make_v_min(int devices, int microbatches, bool r_ops = false);
Schedule make_v_half(int devices, int microbatches, bool r_ops = false);
Schedule make_v_zb(int devices, int microbatches, bool r_ops = false);
// core/schedules/dualpipe.cpp: DeepSeek's DualPipeV.
Schedule make_dualpipev(int devices, int microbatches, bool r_ops = false);
// zb-auto's constructive order with unit times (F = I = W, free hops); the planner's
// search_zero_bubble (planner/zero_bubble_search.h) improves it with the plan's costs.
Schedule make_zb_auto_unit(int devices, int microbatches, int max_inflight, bool r_ops = false);
// core/schedules/async.cpp: PipeDream's 1F1B over `steps` x M micro-batches without a
// flush, with weight stashing, and PipeDream-2BW's (the same order, double-buffered
// weights; needs M >= K so that two versions suffice).
Schedule make_pipedream(int devices, int microbatches, int steps, bool r_ops = false);
Schedule make_2bw(int devices, int microbatches, int steps, bool r_ops = false);
// Steps an asynchronous plan is evaluated over by the planner and the GUI: the first
// fills the pipeline, the second is steady, the last drains (core/report.h set_step_ends).
inline constexpr int kAsyncEvaluationSteps = 3;
// Throws InputError when the spec is out of range (K, M, chunks, too many ops) or its
// kind's record (core/schedule_kinds.h) refuses its chunks or micro-batches.
void check_schedule_spec(const ScheduleSpec& spec);

// The same schedule with re-materialisation: R(s,m) right before the first backward op
// (B or I) of (s,m) on its device.
Schedule with_recompute(Schedule schedule);

// Throws InputError when an op is missing, duplicated, on the wrong device, a W comes
// without its I, B and I/W are mixed for one (stage, micro-batch), or the order cannot
// make progress (names the cycle of waiting devices). `source` prefixes the message
// (a file name) when given.
void validate_schedule(const Schedule& schedule, const std::string& source = "");

// core/schedules/async.cpp: throws InputError when an op of a double-buffered schedule
// (2bw) needs a weight version its stage has not made yet or has already dropped.
// `where` prefixes the message.
void validate_weight_versions(const Schedule& schedule, const std::string& where);

// core/schedule_diagram.cpp. Text diagram: one row per device, one cell per op ("F3" = forward of micro-batch 3).
std::string schedule_diagram(const Schedule& schedule);

// Limits on what a schedule may hold, so that absurd requests fail fast.
inline constexpr int kMaxDevices = 4096;
inline constexpr int64_t kMaxScheduleOps = 50'000'000;

}  // namespace pipescope
