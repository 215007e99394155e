// Schedule generators, the validator and the text diagram.
// Invariant of every generator: each device's list holds exactly the ops of the
// stages placed on it, and walking all lists in order with the implied data
// dependencies (see schedule.h) always makes progress.
#include "core/schedule.h"

#include <algorithm>
#include <deque>
#include <sstream>

#include "core/error.h"
#include "core/op_rules.h"

namespace pipescope {

std::string to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::GPipe: return "gpipe";
    case ScheduleKind::OneFOneB: return "1f1b";
    case ScheduleKind::Interleaved: return "interleaved";
    case ScheduleKind::ZeroBubbleH1: return "zb-h1";
    case ScheduleKind::ZeroBubbleH2: return "zb-h2";
    case ScheduleKind::ZeroBubbleV: return "zb-v";
    case ScheduleKind::DualPipeV: return "dualpipev";
    case ScheduleKind::ZeroBubbleAuto: return "zb-auto";
    case ScheduleKind::PipeDream: return "pipedream";
    case ScheduleKind::PipeDream2BW: return "2bw";
  }
  return "?";
}

ScheduleKind parse_schedule_kind(const std::string& name) {
  if (name == "gpipe") return ScheduleKind::GPipe;
  if (name == "1f1b") return ScheduleKind::OneFOneB;
  if (name == "interleaved") return ScheduleKind::Interleaved;
  for (ScheduleKind k : schedule_kinds()) {
    if (name == to_string(k)) return k;
  }
  throw InputError("unknown schedule \"" + name + "\" (expected " + schedule_kind_names(", ") + ")");
}

const std::vector<ScheduleKind>& schedule_kinds() {
  static const std::vector<ScheduleKind> kinds = {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                                                  ScheduleKind::Interleaved, ScheduleKind::ZeroBubbleH1,
                                                  ScheduleKind::ZeroBubbleH2, ScheduleKind::ZeroBubbleV,
                                                  ScheduleKind::DualPipeV, ScheduleKind::ZeroBubbleAuto,
                                                  ScheduleKind::PipeDream, ScheduleKind::PipeDream2BW};
  return kinds;
}

std::vector<ScheduleKind> default_search_schedules() {
  std::vector<ScheduleKind> out;
  for (ScheduleKind k : schedule_kinds()) {
    if (!is_asynchronous(k)) out.push_back(k);
  }
  return out;
}

std::string schedule_kind_names(const std::string& separator) {
  std::string out;
  for (ScheduleKind k : schedule_kinds()) out += (out.empty() ? "" : separator) + to_string(k);
  return out;
}

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
  if (devices() == 0 || stages() % devices() != 0) return 0;
  std::vector<int> count(static_cast<std::size_t>(devices()), 0);
  for (int d : stage_device) {
    if (d < 0 || d >= devices()) return 0;
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
    if (stage_device[s] == device) out.push_back(s);
  }
  return out;
}

bool Schedule::has_split_backward() const {
  for (const auto& ops : device_ops) {
    for (const Op& op : ops) {
      if (op.kind == OpKind::BackwardInput || op.kind == OpKind::BackwardWeight) return true;
    }
  }
  return false;
}

std::vector<int> stage_device_map(ScheduleKind kind, int devices, int chunks) {
  std::vector<int> map(static_cast<std::size_t>(devices) * chunks);
  const bool v_shape = required_chunks(kind) == 2 && chunks == 2;  // stages d and 2K-1-d on device d
  for (std::size_t st = 0; st < map.size(); ++st) {
    const int s = static_cast<int>(st);
    map[st] = v_shape && s >= devices ? 2 * devices - 1 - s : s % devices;
  }
  return map;
}

int required_chunks(ScheduleKind kind) {
  if (kind == ScheduleKind::Interleaved) return 0;
  return kind == ScheduleKind::ZeroBubbleV || kind == ScheduleKind::DualPipeV ? 2 : 1;
}

std::size_t Schedule::num_ops() const {
  std::size_t n = 0;
  for (const auto& ops : device_ops) n += ops.size();
  return n;
}

void check_schedule_spec(const ScheduleSpec& spec) {
  if (spec.devices < 1 || spec.devices > kMaxDevices) {
    throw InputError("stages: expected 1 to " + std::to_string(kMaxDevices) + ", got " +
                     std::to_string(spec.devices));
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
  if (spec.steps > 1 && !is_asynchronous(spec.kind)) {
    throw InputError("--steps: only the asynchronous schedules (pipedream, 2bw) run several steps in one op list; " +
                     to_string(spec.kind) + " flushes after every step");
  }
  const int need = required_chunks(spec.kind);
  if (need == 1 && spec.chunks != 1) {
    throw InputError("chunks: only the interleaved schedule takes more than 1 chunk per device");
  }
  if (need == 2 && spec.chunks != 2) {
    throw InputError("chunks: " + to_string(spec.kind) + " holds 2 chunks per device (V-shape), got " +
                     std::to_string(spec.chunks));
  }
  int64_t per_pair = spec.kind == ScheduleKind::GPipe || spec.kind == ScheduleKind::OneFOneB ||
                             spec.kind == ScheduleKind::Interleaved || is_asynchronous(spec.kind)
                         ? 2
                         : 3;
  if (spec.recompute) ++per_pair;
  int64_t ops = per_pair * spec.devices * spec.chunks * static_cast<int64_t>(spec.microbatches) * spec.steps;
  if (ops > kMaxScheduleOps) {
    throw InputError("schedule would hold " + std::to_string(ops) + " ops; the limit is " +
                     std::to_string(kMaxScheduleOps) + " (reduce stages or microbatches)");
  }
}

namespace {

Schedule empty_schedule(const ScheduleSpec& spec) {
  Schedule s;
  s.name = to_string(spec.kind);
  s.num_microbatches = spec.microbatches;
  s.recompute = spec.recompute;
  s.stage_device = stage_device_map(spec.kind, spec.devices, spec.chunks);
  s.device_ops.resize(spec.devices);
  return s;
}

// Inserts R(s,m) right before the first backward op of (s,m) when recompute is on.
void add_recompute(Schedule& s) {
  if (!s.recompute) return;
  for (auto& ops : s.device_ops) {
    if (std::any_of(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::Recompute; })) continue;
    std::vector<Op> out;
    out.reserve(ops.size() * 3 / 2);
    for (const Op& op : ops) {
      if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) {
        out.push_back({OpKind::Recompute, op.stage, op.microbatch});
      }
      out.push_back(op);
    }
    ops = std::move(out);
  }
}

}  // namespace

Schedule with_recompute(Schedule s) {
  s.recompute = true;
  add_recompute(s);
  return s;
}

Schedule make_gpipe(int devices, int microbatches, bool recompute) {
  ScheduleSpec spec{ScheduleKind::GPipe, devices, microbatches, 1, recompute};
  check_schedule_spec(spec);
  Schedule s = empty_schedule(spec);
  for (int d = 0; d < devices; ++d) {
    auto& ops = s.device_ops[d];
    ops.reserve(2 * static_cast<std::size_t>(microbatches));
    for (int m = 0; m < microbatches; ++m) ops.push_back({OpKind::Forward, d, m});
    for (int m = 0; m < microbatches; ++m) ops.push_back({OpKind::Backward, d, m});
  }
  add_recompute(s);
  return s;
}

Schedule make_1f1b(int devices, int microbatches, bool recompute) {
  ScheduleSpec spec{ScheduleKind::OneFOneB, devices, microbatches, 1, recompute};
  check_schedule_spec(spec);
  Schedule s = empty_schedule(spec);
  for (int d = 0; d < devices; ++d) {
    auto& ops = s.device_ops[d];
    ops.reserve(2 * static_cast<std::size_t>(microbatches));
    int warmup = std::min(devices - d - 1, microbatches);
    int next_f = 0, next_b = 0;
    for (; next_f < warmup; ++next_f) ops.push_back({OpKind::Forward, d, next_f});
    while (next_f < microbatches) {
      ops.push_back({OpKind::Forward, d, next_f++});
      ops.push_back({OpKind::Backward, d, next_b++});
    }
    while (next_b < microbatches) ops.push_back({OpKind::Backward, d, next_b++});
  }
  add_recompute(s);
  return s;
}

// Megatron-LM's interleaved 1F1B: the k-th forward on a device runs model chunk
// (k mod Kv) / K on micro-batch (k / Kv) K + k mod K; backwards visit chunks in
// reverse. Warm-up is 2 (K - d - 1) + (v - 1) K forwards, at most all of them: Megatron-Core
// 0.16's get_pp_rank_microbatches and torch 2.13's ScheduleInterleaved1F1B (older
// Megatron-LM ran every forward first when M = K; both frameworks dropped that).
Schedule make_interleaved(int devices, int microbatches, int chunks, bool recompute) {
  ScheduleSpec spec{ScheduleKind::Interleaved, devices, microbatches, chunks, recompute};
  check_schedule_spec(spec);
  if (microbatches % devices != 0) {
    throw InputError("microbatches: the interleaved schedule needs M to be a multiple of the "
                     "number of stages K (Megatron-LM's rule); got M = " +
                     std::to_string(microbatches) + ", K = " + std::to_string(devices));
  }
  Schedule s = empty_schedule(spec);
  const int K = devices, v = chunks, total = microbatches * chunks;
  auto op_at = [&](int d, int k, bool forward) {
    int in_group = k % (K * v);
    int chunk = in_group / K;
    if (!forward) chunk = v - 1 - chunk;
    int mb = (k / (K * v)) * K + k % K;
    return Op{forward ? OpKind::Forward : OpKind::Backward, chunk * K + d, mb};
  };
  for (int d = 0; d < K; ++d) {
    auto& ops = s.device_ops[d];
    ops.reserve(2 * static_cast<std::size_t>(total));
    int warmup = std::min((K - d - 1) * 2 + (v - 1) * K, total);
    int f = 0, b = 0;
    for (; f < warmup; ++f) ops.push_back(op_at(d, f, true));
    while (f < total) {
      ops.push_back(op_at(d, f++, true));
      ops.push_back(op_at(d, b++, false));
    }
    while (b < total) ops.push_back(op_at(d, b++, false));
  }
  add_recompute(s);
  return s;
}

// ZB-H1 order (Qi et al., ICLR 2024), found by list-scheduling the split-backward
// pipeline with unit costs (F = Bi = W = 1, free communication). An idle device runs,
// in this priority: the next F if its input is there, fewer than min(K - s, M)
// micro-batches wait for their Bi (1F1B's warm-up bound) and fewer than min(K, M) are
// alive (forward started, W not done); else the next ready Bi; else a deferred W.
// W therefore fills what would be bubbles: with T_F = T_B = T_W the step takes
// (3M + K - 1) T, a bubble of (K - 1) / (3M + K - 1), about a third of 1F1B's, and no
// stage holds more activations than 1F1B's first stage (K micro-batches).
Schedule make_zb_h1(int devices, int microbatches, bool recompute) {
  ScheduleSpec spec{ScheduleKind::ZeroBubbleH1, devices, microbatches, 1, recompute};
  check_schedule_spec(spec);
  Schedule s = empty_schedule(spec);
  const int K = devices, M = microbatches;
  // Completion time of F and Bi per (stage, micro-batch); -1 = not yet done.
  std::vector<std::vector<int64_t>> f_done(K, std::vector<int64_t>(M, -1));
  std::vector<std::vector<int64_t>> b_done(K, std::vector<int64_t>(M, -1));
  std::vector<int> next_f(K, 0), next_b(K, 0), alive(K, 0), before_b(K, 0);
  std::vector<std::deque<int>> pending_w(K);
  std::vector<int64_t> busy_until(K, 0);
  std::vector<Op> running(K, Op{OpKind::Forward, -1, -1});
  int64_t remaining = 3 * static_cast<int64_t>(K) * M;
  for (int64_t t = 0; remaining > 0; ++t) {
    for (int d = 0; d < K; ++d) {  // completions at t
      Op& op = running[d];
      if (op.stage < 0 || busy_until[d] != t) continue;
      if (op.kind == OpKind::Forward) f_done[d][op.microbatch] = t;
      if (op.kind == OpKind::BackwardInput) {
        b_done[d][op.microbatch] = t;
        --before_b[d];
        pending_w[d].push_back(op.microbatch);
      }
      if (op.kind == OpKind::BackwardWeight) --alive[d];
      op.stage = -1;
      --remaining;
    }
    for (int d = 0; d < K; ++d) {  // idle devices pick their next op
      if (running[d].stage >= 0) continue;
      const int in_flight_limit = std::min(K - d, M), alive_limit = std::min(K, M);
      int b = next_b[d], f = next_f[d];
      bool b_ready = b < M && f_done[d][b] >= 0 && (d == K - 1 || b_done[d + 1][b] >= 0);
      bool f_ready = f < M && before_b[d] < in_flight_limit && alive[d] < alive_limit &&
                     (d == 0 || f_done[d - 1][f] >= 0);
      Op pick{OpKind::Forward, -1, -1};
      if (f_ready) {
        pick = {OpKind::Forward, d, f};
        ++next_f[d];
        ++alive[d];
        ++before_b[d];
      } else if (b_ready) {
        pick = {OpKind::BackwardInput, d, b};
        ++next_b[d];
      } else if (!pending_w[d].empty()) {
        pick = {OpKind::BackwardWeight, d, pending_w[d].front()};
        pending_w[d].pop_front();
      }
      if (pick.stage < 0) continue;
      running[d] = pick;
      busy_until[d] = t + 1;
      s.device_ops[d].push_back(pick);
    }
  }
  add_recompute(s);
  return s;
}

Schedule make_schedule(const ScheduleSpec& spec) {
  check_schedule_spec(spec);  // the generators take no chunk count: check the spec's here
  switch (spec.kind) {
    case ScheduleKind::GPipe: return make_gpipe(spec.devices, spec.microbatches, spec.recompute);
    case ScheduleKind::OneFOneB: return make_1f1b(spec.devices, spec.microbatches, spec.recompute);
    case ScheduleKind::Interleaved:
      return make_interleaved(spec.devices, spec.microbatches, spec.chunks, spec.recompute);
    case ScheduleKind::ZeroBubbleH1:
      return make_zb_h1(spec.devices, spec.microbatches, spec.recompute);
    case ScheduleKind::ZeroBubbleH2: return make_zb_h2(spec.devices, spec.microbatches, spec.recompute);
    case ScheduleKind::ZeroBubbleV: return make_zb_v(spec.devices, spec.microbatches, spec.recompute);
    case ScheduleKind::DualPipeV: return make_dualpipev(spec.devices, spec.microbatches, spec.recompute);
    case ScheduleKind::ZeroBubbleAuto:
      return make_zb_auto_unit(spec.devices, spec.microbatches, spec.max_inflight, spec.recompute);
    case ScheduleKind::PipeDream: return make_pipedream(spec.devices, spec.microbatches, spec.steps, spec.recompute);
    case ScheduleKind::PipeDream2BW: return make_2bw(spec.devices, spec.microbatches, spec.steps, spec.recompute);
  }
  throw InputError("unknown schedule kind");
}

namespace {

std::string op_name(const Op& op) {
  return std::string(1, op_letter(op.kind)) + "(stage " + std::to_string(op.stage) + ", micro-batch " +
         std::to_string(op.microbatch) + ")";
}

// The device that makes `need` for micro-batch m, and the op there, or -1.
struct Maker {
  int device = -1;
  Op op{OpKind::Forward, -1, -1};
};

// Names the cycle of devices that wait on each other when no device can move.
std::string describe_deadlock(const Schedule& s, const std::vector<std::size_t>& cursor,
                              const ProductTable& done) {
  std::vector<int> waits_on(static_cast<std::size_t>(s.devices()), -1);
  std::vector<std::string> why(static_cast<std::size_t>(s.devices()));
  for (int d = 0; d < s.devices(); ++d) {
    if (cursor[d] >= s.device_ops[d].size()) continue;
    const Op& op = s.device_ops[d][cursor[d]];
    for (const Need& n : op_needs(op, s.stages(), s.recompute)) {
      if (done.has(n.product, n.stage, op.microbatch)) continue;
      waits_on[d] = s.stage_device[n.stage];
      why[d] = "device " + std::to_string(d) + " at " + op_name(op) + " waits for stage " + std::to_string(n.stage) +
               " on device " + std::to_string(waits_on[d]);
      break;
    }
  }
  // Follow the waits from the first stuck device until a device repeats.
  int start = 0;
  while (start < s.devices() && waits_on[start] < 0) ++start;
  if (start == s.devices()) return "";
  std::vector<int> seen(static_cast<std::size_t>(s.devices()), -1);
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
  if (d >= 0 && cursor[d] < s.device_ops[d].size()) out += " (a cycle)";
  return out;
}

// Walks the schedule in an order that respects every need (core/op_rules.h), calling
// visit(device, index) for each op; throws InputError naming the cycle on a deadlock.
template <typename Visit>
void walk_in_dependency_order(const Schedule& s, const std::string& source, Visit&& visit) {
  ProductTable done(s.stages(), s.microbatches());
  std::vector<std::size_t> cursor(s.devices(), 0);
  std::size_t left = s.num_ops();
  while (left > 0) {
    bool progress = false;
    for (int d = 0; d < s.devices(); ++d) {
      const auto& ops = s.device_ops[d];
      while (cursor[d] < ops.size() && done.ready(ops[cursor[d]], s.recompute)) {
        const Op& op = ops[cursor[d]];
        visit(d, cursor[d]);
        done.mark(product_of(op.kind), op.stage, op.microbatch);
        ++cursor[d];
        --left;
        progress = true;
      }
    }
    if (!progress) {
      throw InputError((source.empty() ? "" : source + ": ") +
                       "schedule cannot make progress: " + describe_deadlock(s, cursor, done));
    }
  }
}

}  // namespace

void validate_schedule(const Schedule& s, const std::string& source) {
  const std::string where = (source.empty() ? "" : source + ": ") + "schedule: ";
  const int S = s.stages(), M = s.microbatches(), K = s.devices();
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
    if (s.stage_device[st] < 0 || s.stage_device[st] >= K) {
      throw InputError(where + "stage " + std::to_string(st) + " is placed on device " +
                       std::to_string(s.stage_device[st]) + ", outside 0.." + std::to_string(K - 1));
    }
    used[s.stage_device[st]] = 1;
  }
  for (int d = 0; d < K; ++d) {
    if (!used[d]) throw InputError(where + "device " + std::to_string(d) + " holds no stage");
  }
  constexpr int kKinds = 5;
  std::vector<int> count(static_cast<std::size_t>(kKinds) * S * M, 0);
  auto at = [&](OpKind k, int st, int m) -> int& { return count[(static_cast<std::size_t>(k) * S + st) * M + m]; };
  for (int d = 0; d < K; ++d) {
    for (std::size_t i = 0; i < s.device_ops[d].size(); ++i) {
      const Op& op = s.device_ops[d][i];
      const std::string here = where + "device " + std::to_string(d) + ", op " + std::to_string(i) + ": ";
      if (op.stage < 0 || op.stage >= S || op.microbatch < 0 || op.microbatch >= M) {
        throw InputError(here + op_name(op) + " is outside " + std::to_string(S) + " stages x " + std::to_string(M) +
                         " micro-batches");
      }
      if (s.stage_device[op.stage] != d) {
        throw InputError(here + op_name(op) + " runs on device " + std::to_string(d) + " but stage " +
                         std::to_string(op.stage) + " lives on device " + std::to_string(s.stage_device[op.stage]));
      }
      if (op.kind == OpKind::Recompute && !s.recompute) {
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
      if (s.recompute && !at(OpKind::Recompute, st, m)) missing(OpKind::Recompute, " (re-materialisation is on)");
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

std::string schedule_diagram(const Schedule& s) {
  // Slot widths: backward twice a forward, as in the GPipe paper's figure.
  auto slots = [](OpKind k) { return k == OpKind::Backward ? 2 : 1; };
  std::vector<std::vector<int64_t>> start(s.devices());
  for (int d = 0; d < s.devices(); ++d) start[d].resize(s.device_ops[d].size());
  const int S = s.stages(), M = s.microbatches();
  std::vector<int64_t> end_of(static_cast<std::size_t>(kProducts) * S * M, 0);
  auto end_ref = [&](Product p, int st, int m) -> int64_t& {
    return end_of[(static_cast<std::size_t>(p) * S + st) * M + m];
  };
  std::vector<int64_t> device_free(s.devices(), 0);
  walk_in_dependency_order(s, "", [&](int d, std::size_t i) {
    const Op& op = s.device_ops[d][i];
    int64_t t = device_free[d];
    for (const Need& n : op_needs(op, S, s.recompute)) t = std::max(t, end_ref(n.product, n.stage, op.microbatch));
    start[d][i] = t;
    device_free[d] = t + slots(op.kind);
    end_ref(product_of(op.kind), op.stage, op.microbatch) = device_free[d];
  });
  int64_t width = *std::max_element(device_free.begin(), device_free.end());
  // A stage's chunk: its rank among the stages of its device (a, b, ... in the cells).
  std::vector<int> chunk(static_cast<std::size_t>(S), 0);
  int most = 1;
  for (int d = 0; d < s.devices(); ++d) {
    std::vector<int> mine = s.stages_of(d);
    for (std::size_t k = 0; k < mine.size(); ++k) chunk[mine[k]] = static_cast<int>(k);
    most = std::max(most, static_cast<int>(mine.size()));
  }
  // Room for the letter, the micro-batch, a chunk letter when devices hold several stages, and a space.
  const int cell = (M > 99 ? 5 : (M > 9 ? 4 : 3)) + (most > 1 ? 1 : 0);
  std::ostringstream out;
  out << s.name << ", K = " << s.devices() << ", M = " << s.step_microbatches();
  if (s.steps > 1) out << " x " << s.steps << " steps without a flush (micro-batch n is in step n / " << s.step_microbatches() << ")";
  if (most > 1) out << ", " << S << " stages";
  out << " (F forward, B backward, I input grad, W weight grad, R recompute";
  if (most > 1) out << "; a/b/... after the number = the device's 1st/2nd/... stage";
  out << "; '.' idle)\n";
  for (int d = 0; d < s.devices(); ++d) {
    std::vector<std::string> row(static_cast<std::size_t>(width), std::string(cell, ' '));
    for (auto& c : row) c[cell - 2] = '.';
    for (std::size_t i = 0; i < s.device_ops[d].size(); ++i) {
      const Op& op = s.device_ops[d][i];
      std::string label(1, op_letter(op.kind));
      label += std::to_string(op.microbatch);  // appended: GCC 12 -Wrestrict false positive (PR105329)
      if (most > 1) label += static_cast<char>('a' + std::min(chunk[op.stage], 25));
      for (int k = 0; k < slots(op.kind); ++k) {
        std::string text = k == 0 ? label : std::string("~");
        std::string padded = text.size() >= static_cast<std::size_t>(cell)
                                 ? text.substr(0, cell)
                                 : std::string(cell - text.size(), ' ') + text;
        row[start[d][i] + k] = padded;
      }
    }
    out << "device " << d << " |";
    for (const auto& c : row) out << c;
    out << "\n";
  }
  return out.str();
}

}  // namespace pipescope
