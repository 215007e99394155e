// Schedule vocabulary: names of the ops, the Schedule's accessors, the spec
// check every generator runs first (each kind's rules read from core/schedule_kinds.h),
// and the validator. The generators live in
// core/schedules/ (one file per family), the text diagram in core/schedule_diagram.cpp.
// Invariant: validate_schedule accepts exactly the schedules whose per-device lists,
// walked with the needs of core/op_rules.h, always make progress.
#include "core/schedule.h"

#include <algorithm>

#include "core/error.h"
#include "core/op_rules.h"
#include "core/schedule_walk.h"

namespace pipescope {

std::string to_string(OpKind kind) {
  switch (kind) {
    case OpKind::Forward: return "forward";
    case OpKind::Backward: return "backward";
    case OpKind::BackwardInput: return "backward_input";
    case OpKind::BackwardWeight: return "backward_weight";
    case OpKind::Recompute: return "recompute";
  }
  return "?";
}

char op_letter(OpKind kind) {
  switch (kind) {
    case OpKind::Forward: return 'F';
    case OpKind::Backward: return 'B';
    case OpKind::BackwardInput: return 'I';
    case OpKind::BackwardWeight: return 'W';
    case OpKind::Recompute: return 'R';
  }
  return '?';
}

bool parse_op_letter(char letter, OpKind& kind) {
  for (OpKind k : {OpKind::Forward, OpKind::Backward, OpKind::BackwardInput, OpKind::BackwardWeight,
                   OpKind::Recompute}) {
    if (op_letter(k) == letter) {
      kind = k;
      return true;
    }
  }
  return false;
}

int Schedule::chunks() const {
  if (positions() == 0 || stages() % positions() != 0) return 0;
  std::vector<int> count(static_cast<std::size_t>(positions()), 0);
  for (int d : stage_position) {
    if (d < 0 || d >= positions()) return 0;
    ++count[d];
  }
  for (int c : count) {
    if (c != count.front()) return 0;
  }
  return count.front();
}

std::vector<int> Schedule::stages_of(int device) const {
  std::vector<int> out;
  for (int s = 0; s < stages(); ++s) {
    if (stage_position[s] == device) out.push_back(s);
  }
  return out;
}

bool Schedule::has_split_backward() const {
  for (const auto& ops : position_ops) {
    for (const Op& op : ops) {
      if (op.kind == OpKind::BackwardInput || op.kind == OpKind::BackwardWeight) return true;
    }
  }
  return false;
}

std::size_t Schedule::num_ops() const {
  std::size_t n = 0;
  for (const auto& ops : position_ops) n += ops.size();
  return n;
}

void check_schedule_spec(const ScheduleSpec& spec) {
  if (spec.positions < 1 || spec.positions > kMaxDevices) {
    throw InputError("stages: expected 1 to " + std::to_string(kMaxDevices) + ", got " +
                     std::to_string(spec.positions));
  }
  if (spec.microbatches < 1) {
    throw InputError("microbatches: expected at least 1, got " + std::to_string(spec.microbatches));
  }
  if (spec.max_inflight < 0) {
    throw InputError("--max-inflight: expected at least 1 micro-batch alive per stage (0: K), got " +
                     std::to_string(spec.max_inflight));
  }
  if (spec.max_inflight > 0 && spec.kind != ScheduleKind::ZeroBubbleAuto) {
    throw InputError("--max-inflight: only zb-auto takes a cap of alive micro-batches");
  }
  if (spec.chunks < 1) throw InputError("chunks: expected at least 1, got " + std::to_string(spec.chunks));
  if (spec.steps < 1) throw InputError("--steps: expected at least 1, got " + std::to_string(spec.steps));
  const ScheduleKindInfo& kind = schedule_kind(spec.kind);
  if (spec.steps > 1 && !asynchronous_kind(kind)) {
    throw InputError("--steps: only the asynchronous schedules (" + schedule_kind_names(asynchronous_kind) +
                     ") run several steps in one op list; " + to_string(spec.kind) + " flushes after every step");
  }
  if (kind.chunks == ChunkRule::One && spec.chunks != 1) {
    throw InputError("chunks: only " +
                     schedule_kind_names([](const ScheduleKindInfo& k) { return k.chunks == ChunkRule::Looped; }) +
                     " take more than 1 chunk per device");
  }
  if (kind.chunks == ChunkRule::VShape && spec.chunks != 2) {
    throw InputError("chunks: " + to_string(spec.kind) + " holds 2 chunks per device (V-shape), got " +
                     std::to_string(spec.chunks));
  }
  int64_t per_pair = kind.split_backward ? 3 : 2;
  if (spec.r_ops) ++per_pair;
  int64_t ops = per_pair * spec.positions * spec.chunks * static_cast<int64_t>(spec.microbatches) * spec.steps;
  if (ops > kMaxScheduleOps) {
    throw InputError("schedule would hold " + std::to_string(ops) + " ops; the limit is " +
                     std::to_string(kMaxScheduleOps) + " (reduce stages or microbatches)");
  }
  if (const std::string why = microbatch_refusal(spec.kind, spec.positions, spec.microbatches); !why.empty()) {
    throw InputError("microbatches: " + why);
  }
}

namespace detail {

std::string op_name(const Op& op) {
  return std::string(1, op_letter(op.kind)) + "(stage " + std::to_string(op.stage) + ", micro-batch " +
         std::to_string(op.microbatch) + ")";
}

// Names the cycle of devices that wait on each other when no device can move.
std::string describe_deadlock(const Schedule& s, const std::vector<std::size_t>& cursor,
                              const ProductTable& done) {
  std::vector<int> waits_on(static_cast<std::size_t>(s.positions()), -1);
  std::vector<std::string> why(static_cast<std::size_t>(s.positions()));
  for (int d = 0; d < s.positions(); ++d) {
    if (cursor[d] >= s.position_ops[d].size()) continue;
    const Op& op = s.position_ops[d][cursor[d]];
    for (const Need& n : op_needs(op, s.stages(), s.r_ops)) {
      if (done.has(n.product, n.stage, op.microbatch)) continue;
      waits_on[d] = s.stage_position[n.stage];
      why[d] = "device " + std::to_string(d) + " at " + op_name(op) + " waits for stage " + std::to_string(n.stage) +
               " on device " + std::to_string(waits_on[d]);
      break;
    }
  }
  // Follow the waits from the first stuck device until a device repeats.
  int start = 0;
  while (start < s.positions() && waits_on[start] < 0) ++start;
  if (start == s.positions()) return "";
  std::vector<int> seen(static_cast<std::size_t>(s.positions()), -1);
  std::vector<int> path;
  int d = start;
  while (d >= 0 && seen[d] < 0) {
    seen[d] = static_cast<int>(path.size());
    path.push_back(d);
    d = waits_on[d];
  }
  std::string out;
  const int from = d >= 0 ? seen[d] : 0;
  for (std::size_t i = static_cast<std::size_t>(from); i < path.size(); ++i) {
    if (!why[path[i]].empty()) out += (out.empty() ? "" : "; ") + why[path[i]];
  }
  if (d >= 0 && cursor[d] < s.position_ops[d].size()) out += " (a cycle)";
  return out;
}

}  // namespace detail

using detail::op_name;
using detail::walk_in_dependency_order;

void validate_schedule(const Schedule& s, const std::string& source) {
  const std::string where = (source.empty() ? "" : source + ": ") + "schedule: ";
  const int S = s.stages(), M = s.microbatches(), K = s.positions();
  if (K < 1 || K > kMaxDevices) throw InputError(where + "expected 1 to " + std::to_string(kMaxDevices) + " devices");
  if (S < 1) throw InputError(where + "expected at least one stage");
  if (M < 1) throw InputError(where + "expected at least one micro-batch");
  if (s.steps < 1 || M % s.steps != 0) {
    throw InputError(where + "steps: expected a positive divisor of the " + std::to_string(M) +
                     " micro-batches, got " + std::to_string(s.steps));
  }
  if (s.steps > 1 && !s.asynchronous()) {
    throw InputError(where + "steps: " + std::to_string(s.steps) + " steps in one op list need an asynchronous "
                     "weight update (stash or double-buffer); a flushed schedule holds one step");
  }
  if (static_cast<int64_t>(S) * M * 5 > kMaxScheduleOps) {
    throw InputError(where + "too large: " + std::to_string(S) + " stages x " + std::to_string(M) + " micro-batches");
  }
  std::vector<char> used(static_cast<std::size_t>(K), 0);
  for (int st = 0; st < S; ++st) {
    if (s.stage_position[st] < 0 || s.stage_position[st] >= K) {
      throw InputError(where + "stage " + std::to_string(st) + " is placed on device " +
                       std::to_string(s.stage_position[st]) + ", outside 0.." + std::to_string(K - 1));
    }
    used[s.stage_position[st]] = 1;
  }
  for (int d = 0; d < K; ++d) {
    if (!used[d]) throw InputError(where + "device " + std::to_string(d) + " holds no stage");
  }
  constexpr int kKinds = 5;
  std::vector<int> count(static_cast<std::size_t>(kKinds) * S * M, 0);
  auto at = [&](OpKind k, int st, int m) -> int& { return count[(static_cast<std::size_t>(k) * S + st) * M + m]; };
  for (int d = 0; d < K; ++d) {
    for (std::size_t i = 0; i < s.position_ops[d].size(); ++i) {
      const Op& op = s.position_ops[d][i];
      const std::string here = where + "device " + std::to_string(d) + ", op " + std::to_string(i) + ": ";
      if (op.stage < 0 || op.stage >= S || op.microbatch < 0 || op.microbatch >= M) {
        throw InputError(here + op_name(op) + " is outside " + std::to_string(S) + " stages x " + std::to_string(M) +
                         " micro-batches");
      }
      if (s.stage_position[op.stage] != d) {
        throw InputError(here + op_name(op) + " runs on device " + std::to_string(d) + " but stage " +
                         std::to_string(op.stage) + " lives on device " + std::to_string(s.stage_position[op.stage]));
      }
      if (op.kind == OpKind::Recompute && !s.r_ops) {
        throw InputError(here + op_name(op) + ": an R op in a schedule without re-materialisation");
      }
      if (++at(op.kind, op.stage, op.microbatch) > 1) {
        throw InputError(here + op_name(op) + " appears twice");
      }
    }
  }
  for (int st = 0; st < S; ++st) {
    for (int m = 0; m < M; ++m) {
      const Op f{OpKind::Forward, st, m};
      auto missing = [&](OpKind k, const std::string& why) {
        throw InputError(where + op_name({k, st, m}) + " is missing" + why);
      };
      if (!at(OpKind::Forward, st, m)) missing(OpKind::Forward, "");
      if (s.r_ops && !at(OpKind::Recompute, st, m)) missing(OpKind::Recompute, " (re-materialisation is on)");
      const int b = at(OpKind::Backward, st, m), i = at(OpKind::BackwardInput, st, m), w = at(OpKind::BackwardWeight, st, m);
      if (b && (i || w)) {
        throw InputError(where + op_name({OpKind::Backward, st, m}) + " and a split backward (I/W) of the same " +
                         "stage and micro-batch: use B, or I then W");
      }
      if (w && !i) throw InputError(where + op_name({OpKind::BackwardWeight, st, m}) + " has no I before it");
      if (i && !w) missing(OpKind::BackwardWeight, " (its I is there)");
      if (!b && !i) missing(OpKind::Backward, " (give B, or I and W)");
      (void)f;
    }
  }
  walk_in_dependency_order(s, source, [](int, std::size_t) {});
  validate_weight_versions(s, where);
}

}  // namespace pipescope
