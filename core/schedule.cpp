// Schedule generators, the validator and the text diagram.
// Invariant of every generator: each device's list holds exactly the ops of the
// stages placed on it, and walking all lists in order with the implied data
// dependencies (see schedule.h) always makes progress.
#include "core/schedule.h"

#include <algorithm>
#include <deque>
#include <sstream>

#include "core/error.h"

namespace pipescope {

std::string to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::GPipe: return "gpipe";
    case ScheduleKind::OneFOneB: return "1f1b";
    case ScheduleKind::Interleaved: return "interleaved";
    case ScheduleKind::ZeroBubbleH1: return "zb-h1";
  }
  return "?";
}

ScheduleKind parse_schedule_kind(const std::string& name) {
  if (name == "gpipe") return ScheduleKind::GPipe;
  if (name == "1f1b") return ScheduleKind::OneFOneB;
  if (name == "interleaved") return ScheduleKind::Interleaved;
  if (name == "zb-h1") return ScheduleKind::ZeroBubbleH1;
  throw InputError("unknown schedule \"" + name + "\" (expected gpipe, 1f1b, interleaved or zb-h1)");
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
    case OpKind::BackwardInput: return 'b';
    case OpKind::BackwardWeight: return 'W';
    case OpKind::Recompute: return 'R';
  }
  return '?';
}

std::size_t Schedule::num_ops() const {
  std::size_t n = 0;
  for (const auto& ops : device_ops) n += ops.size();
  return n;
}

namespace {

void check_spec(const ScheduleSpec& spec) {
  if (spec.devices < 1 || spec.devices > kMaxDevices) {
    throw InputError("stages: expected 1 to " + std::to_string(kMaxDevices) + ", got " +
                     std::to_string(spec.devices));
  }
  if (spec.microbatches < 1) {
    throw InputError("microbatches: expected at least 1, got " + std::to_string(spec.microbatches));
  }
  if (spec.chunks < 1) throw InputError("chunks: expected at least 1, got " + std::to_string(spec.chunks));
  if (spec.kind != ScheduleKind::Interleaved && spec.chunks != 1) {
    throw InputError("chunks: only the interleaved schedule takes more than 1 chunk per device");
  }
  int64_t per_pair = spec.kind == ScheduleKind::ZeroBubbleH1 ? 3 : 2;
  if (spec.recompute) ++per_pair;
  int64_t ops = per_pair * spec.devices * spec.chunks * static_cast<int64_t>(spec.microbatches);
  if (ops > kMaxScheduleOps) {
    throw InputError("schedule would hold " + std::to_string(ops) + " ops; the limit is " +
                     std::to_string(kMaxScheduleOps) + " (reduce stages or microbatches)");
  }
}

Schedule empty_schedule(const ScheduleSpec& spec) {
  Schedule s;
  s.spec = spec;
  int stages = spec.devices * spec.chunks;
  s.stage_device.resize(stages);
  for (int st = 0; st < stages; ++st) s.stage_device[st] = st % spec.devices;
  s.device_ops.resize(spec.devices);
  return s;
}

// Inserts R(s,m) right before the first backward op of (s,m) when recompute is on.
void add_recompute(Schedule& s) {
  if (!s.spec.recompute) return;
  for (auto& ops : s.device_ops) {
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

Schedule make_gpipe(int devices, int microbatches, bool recompute) {
  ScheduleSpec spec{ScheduleKind::GPipe, devices, microbatches, 1, recompute};
  check_spec(spec);
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
  check_spec(spec);
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
// reverse. Warm-up is 2 (K - d - 1) + (v - 1) K forwards (all of them when M = K).
Schedule make_interleaved(int devices, int microbatches, int chunks, bool recompute) {
  ScheduleSpec spec{ScheduleKind::Interleaved, devices, microbatches, chunks, recompute};
  check_spec(spec);
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
    int warmup = microbatches == K ? total : std::min((K - d - 1) * 2 + (v - 1) * K, total);
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
  check_spec(spec);
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
  switch (spec.kind) {
    case ScheduleKind::GPipe: return make_gpipe(spec.devices, spec.microbatches, spec.recompute);
    case ScheduleKind::OneFOneB: return make_1f1b(spec.devices, spec.microbatches, spec.recompute);
    case ScheduleKind::Interleaved:
      return make_interleaved(spec.devices, spec.microbatches, spec.chunks, spec.recompute);
    case ScheduleKind::ZeroBubbleH1:
      return make_zb_h1(spec.devices, spec.microbatches, spec.recompute);
  }
  throw InputError("unknown schedule kind");
}

namespace {

// Walks the schedule in an order that respects every dependency, calling
// visit(device, index) for each op; throws InputError on a deadlock.
template <typename Visit>
void walk_in_dependency_order(const Schedule& s, Visit&& visit) {
  const int S = s.stages(), M = s.microbatches();
  constexpr int kKinds = 5;
  std::vector<uint8_t> done(static_cast<std::size_t>(kKinds) * S * M, 0);
  auto flag = [&](OpKind k, int st, int m) -> uint8_t& {
    return done[(static_cast<std::size_t>(k) * S + st) * M + m];
  };
  auto ready = [&](const Op& op) {
    switch (op.kind) {
      case OpKind::Forward: return op.stage == 0 || flag(OpKind::Forward, op.stage - 1, op.microbatch);
      case OpKind::Recompute: return bool(flag(OpKind::Forward, op.stage, op.microbatch));
      case OpKind::Backward:
      case OpKind::BackwardInput: {
        if (!flag(OpKind::Forward, op.stage, op.microbatch)) return false;
        if (s.spec.recompute && !flag(OpKind::Recompute, op.stage, op.microbatch)) return false;
        if (op.stage == S - 1) return true;
        return bool(flag(OpKind::Backward, op.stage + 1, op.microbatch)) ||
               bool(flag(OpKind::BackwardInput, op.stage + 1, op.microbatch));
      }
      case OpKind::BackwardWeight: return bool(flag(OpKind::BackwardInput, op.stage, op.microbatch));
    }
    return false;
  };
  std::vector<std::size_t> cursor(s.devices(), 0);
  std::size_t left = s.num_ops();
  while (left > 0) {
    bool progress = false;
    for (int d = 0; d < s.devices(); ++d) {
      const auto& ops = s.device_ops[d];
      while (cursor[d] < ops.size() && ready(ops[cursor[d]])) {
        const Op& op = ops[cursor[d]];
        visit(d, cursor[d]);
        flag(op.kind, op.stage, op.microbatch) = 1;
        ++cursor[d];
        --left;
        progress = true;
      }
    }
    if (!progress) {
      std::ostringstream msg;
      msg << "schedule cannot make progress; devices wait on:";
      for (int d = 0; d < s.devices(); ++d) {
        if (cursor[d] < s.device_ops[d].size()) {
          const Op& op = s.device_ops[d][cursor[d]];
          msg << " device " << d << " at " << to_string(op.kind) << "(stage " << op.stage
              << ", micro-batch " << op.microbatch << ");";
        }
      }
      throw InputError(msg.str());
    }
  }
}

}  // namespace

void validate_schedule(const Schedule& s) {
  const int S = s.stages(), M = s.microbatches();
  if (static_cast<int>(s.device_ops.size()) != s.devices()) {
    throw InputError("schedule: expected one op list per device");
  }
  std::vector<OpKind> kinds = {OpKind::Forward};
  if (s.split_backward()) {
    kinds.push_back(OpKind::BackwardInput);
    kinds.push_back(OpKind::BackwardWeight);
  } else {
    kinds.push_back(OpKind::Backward);
  }
  if (s.spec.recompute) kinds.push_back(OpKind::Recompute);
  std::vector<int> count(static_cast<std::size_t>(5) * S * M, 0);
  for (int d = 0; d < s.devices(); ++d) {
    for (const Op& op : s.device_ops[d]) {
      if (op.stage < 0 || op.stage >= S || op.microbatch < 0 || op.microbatch >= M) {
        throw InputError("schedule: device " + std::to_string(d) + " has an op outside " +
                         std::to_string(S) + " stages x " + std::to_string(M) + " micro-batches");
      }
      if (s.stage_device[op.stage] != d) {
        throw InputError("schedule: " + to_string(op.kind) + "(stage " + std::to_string(op.stage) +
                         ") is on device " + std::to_string(d) + " but the stage lives on device " +
                         std::to_string(s.stage_device[op.stage]));
      }
      if (std::find(kinds.begin(), kinds.end(), op.kind) == kinds.end()) {
        throw InputError("schedule: unexpected " + to_string(op.kind) + " op");
      }
      ++count[(static_cast<std::size_t>(op.kind) * S + op.stage) * M + op.microbatch];
    }
  }
  for (OpKind k : kinds) {
    for (int st = 0; st < S; ++st) {
      for (int m = 0; m < M; ++m) {
        int c = count[(static_cast<std::size_t>(k) * S + st) * M + m];
        if (c != 1) {
          throw InputError("schedule: " + to_string(k) + "(stage " + std::to_string(st) +
                           ", micro-batch " + std::to_string(m) + ") appears " + std::to_string(c) +
                           " times, expected once");
        }
      }
    }
  }
  walk_in_dependency_order(s, [](int, std::size_t) {});
}

std::string schedule_diagram(const Schedule& s) {
  // Slot widths: backward twice a forward, as in the GPipe paper's figure.
  auto slots = [](OpKind k) { return k == OpKind::Backward ? 2 : 1; };
  std::vector<std::vector<int64_t>> start(s.devices());
  for (int d = 0; d < s.devices(); ++d) start[d].resize(s.device_ops[d].size());
  const int S = s.stages(), M = s.microbatches();
  std::vector<int64_t> end_of(static_cast<std::size_t>(5) * S * M, 0);
  auto end_ref = [&](OpKind k, int st, int m) -> int64_t& {
    return end_of[(static_cast<std::size_t>(k) * S + st) * M + m];
  };
  std::vector<int64_t> device_free(s.devices(), 0);
  walk_in_dependency_order(s, [&](int d, std::size_t i) {
    const Op& op = s.device_ops[d][i];
    int64_t t = device_free[d];
    auto after = [&](OpKind k, int st) { t = std::max(t, end_ref(k, st, op.microbatch)); };
    if (op.kind == OpKind::Forward && op.stage > 0) after(OpKind::Forward, op.stage - 1);
    if ((op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) && op.stage + 1 < S) {
      after(OpKind::Backward, op.stage + 1);
      after(OpKind::BackwardInput, op.stage + 1);
    }
    start[d][i] = t;
    device_free[d] = t + slots(op.kind);
    end_ref(op.kind, op.stage, op.microbatch) = device_free[d];
  });
  int64_t width = *std::max_element(device_free.begin(), device_free.end());
  const int cell = M > 99 ? 5 : (M > 9 ? 4 : 3);
  std::ostringstream out;
  out << to_string(s.spec.kind) << ", K = " << s.devices() << ", M = " << M;
  if (s.spec.chunks > 1) out << ", v = " << s.spec.chunks;
  out << " (F forward, B backward, b input grad, W weight grad, R recompute";
  if (s.spec.chunks > 1) out << "; a/b/... after the number = model chunk";
  out << "; '.' idle)\n";
  for (int d = 0; d < s.devices(); ++d) {
    std::vector<std::string> row(static_cast<std::size_t>(width), std::string(cell, ' '));
    for (auto& c : row) c[cell - 2] = '.';
    for (std::size_t i = 0; i < s.device_ops[d].size(); ++i) {
      const Op& op = s.device_ops[d][i];
      std::string label = std::string(1, op_letter(op.kind)) + std::to_string(op.microbatch);
      if (s.spec.chunks > 1) label += static_cast<char>('a' + op.stage / s.devices());
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
