// zb-auto's search (see zero_bubble_search.h). Every candidate is a complete, valid
// schedule that holds at most the cap on every device; the simulator ranks them by
// (longest device span, step), ties by candidate order, so the result is deterministic.
#include "planner/zero_bubble_search.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "core/error.h"
#include "core/schedules/list_schedule.h"
#include "core/op_rules.h"
#include "sim/simulator.h"

namespace pipescope {

namespace {

// What device d's memory leaves for stashes: its size less the static bytes of its
// stages and the transients of its largest op (above the op's own stash charge), and the
// flat gradient copy of a replicated position's all-reduce.
int64_t memory_left(const CostModel& c, const Hardware& h, int d) {
  int64_t params = 0, transient = 0;
  for (std::size_t st = 0; st < c.stages.size(); ++st) {
    if (c.stage_position[st] != d) continue;
    const StageCost& cost = c.stages[st];
    params += cost.parameter_bytes;
    for (int k = 0; k < 5; ++k) {
      const OpKind kind = static_cast<OpKind>(k);
      transient = std::max(transient, cost.memory[0].of(kind).peak - op_charge_bytes(kind, cost, false));
    }
  }
  const int r = static_cast<int>(c.position_devices[d].size());
  transient = std::max(transient, allreduce_buffer_bytes(params, r));
  return h.memory_bytes - static_bytes(params, c.optimizer_state_factor) - transient;
}

}  // namespace

ZeroBubbleLimits zero_bubble_limits(const Plan& plan, const CostModel& costs, const Hardware& hardware) {
  ZeroBubbleLimits out;
  const int K = plan.pipeline_devices();
  if (plan.activation_budget_bytes > 0) {
    out.max_inflight = plan.max_inflight > 0 ? plan.max_inflight : plan.microbatches;
    out.budget_bytes.assign(static_cast<std::size_t>(K), plan.activation_budget_bytes);
    return out;
  }
  out.max_inflight = plan.max_inflight > 0 ? plan.max_inflight : K;
  if (plan.max_inflight > 0 || hardware.memory_bytes <= 0) return out;
  std::vector<int64_t> budget;
  for (int d = 0; d < K; ++d) {
    budget.push_back(memory_left(costs, hardware, d));
    for (std::size_t st = 0; st < costs.stages.size(); ++st) {
      if (costs.stage_position[st] == d && costs.stages[st].activation_bytes > budget.back()) return out;  // no room
    }
  }
  out.max_inflight = plan.microbatches;
  out.budget_bytes = std::move(budget);
  return out;
}

Schedule schedule_for_costs(const Plan& plan, const CostModel& costs, const Hardware& hardware,
                            const RuntimeCosts* runtime) {
  if (!plan.schedule_file.empty() || plan.schedule != ScheduleKind::ZeroBubbleAuto) return schedule_for(plan);
  const ZeroBubbleLimits limits = zero_bubble_limits(plan, costs, hardware);
  ZeroBubbleSearchOptions o;
  o.activation_budget_bytes = limits.budget_bytes;
  o.p2p = p2p_of(plan, hardware);
  o.runtime = runtime;
  Schedule s = search_zero_bubble(costs, hardware, limits.max_inflight, plan.microbatches, nullptr, o);
  return has_r_ops(plan.recompute) ? with_recompute(std::move(s)) : s;
}

std::vector<int64_t> peak_stash_bytes(const Schedule& s, const CostModel& c) {
  std::vector<int64_t> peaks;
  const int M = s.microbatches();
  std::vector<int64_t> held(static_cast<std::size_t>(s.stages()) * M, 0);
  for (const auto& ops : s.position_ops) {
    int64_t now = 0, most = 0;
    for (const Op& op : ops) {
      int64_t& mine = held[static_cast<std::size_t>(op.stage) * M + op.microbatch];
      const StageCost& cost = c.stages[op.stage];
      if (op.kind == OpKind::Forward) mine = cost.activation_bytes, now += mine, most = std::max(most, now);
      if (op.kind == OpKind::BackwardInput) mine -= cost.freed_at_input_bytes, now -= cost.freed_at_input_bytes;
      if (op_frees(op.kind)) now -= mine, mine = 0;
    }
    peaks.push_back(most);
  }
  return peaks;
}

int max_alive_microbatches(const Schedule& s) {
  int most = 0;
  for (const auto& ops : s.position_ops) {
    int alive = 0;
    for (const Op& op : ops) {
      if (op.kind == OpKind::Forward) most = std::max(most, ++alive);
      if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardWeight) --alive;
    }
  }
  return most;
}

namespace {

int64_t hop_ns(const CostModel& c, const Hardware& h, int s) {
  const Link& l = h.link_between(c.position_device[s], c.position_device[s + 1]);
  return l.latency_ns() + l.busy_ns(c.stages[s].send_bytes);
}

int64_t work_ns(const StageCost& st) { return st.forward_ns + st.backward_input_ns + st.backward_weight_ns; }

}  // namespace

int64_t zero_bubble_cap_bound_ns(const CostModel& c, const Hardware& h, int cap, int M, int64_t last_budget) {
  const int K = static_cast<int>(c.stages.size());
  int64_t bound = 0;
  for (const StageCost& st : c.stages) bound = std::max(bound, M * work_ns(st));
  if (K < 2) return bound;
  int64_t chain = 0;
  for (int s = 0; s + 1 < K; ++s) chain += c.stages[s].forward_ns + c.stages[s].backward_input_ns + 2 * hop_ns(c, h, s);
  const StageCost& last = c.stages[K - 1];
  int64_t waiting = std::min(cap, M);  // W passes device K-1 may hold after its last I
  const int64_t need = last.activation_bytes - last.freed_at_input_bytes;
  if (last_budget > 0 && need > 0) waiting = std::min<int64_t>(waiting, 1 + std::max<int64_t>(0, last_budget - last.activation_bytes) / need);
  const int64_t device0 = chain + M * work_ns(last) - waiting * last.backward_weight_ns +
                          c.stages[0].backward_weight_ns;
  return std::max(bound, device0);
}

int64_t zero_bubble_step_bound_ns(const Schedule& schedule, const CostModel& costs, const Hardware& hardware) {
  int64_t bound = 0, chain = 0;
  for (int d = 0; d < schedule.positions(); ++d) {
    int64_t busy = 0, gradient_bytes = 0;
    for (const Op& op : schedule.position_ops[d]) busy += op_duration_ns(op.kind, costs.stages[op.stage]);
    for (int st = 0; st < schedule.stages(); ++st) {
      if (schedule.stage_position[st] != d) continue;
      busy += costs.stages[st].optimizer_ns;  // after the last op (and the all-reduce), as the simulator runs it
      gradient_bytes += costs.stages[st].parameter_bytes;
    }
    const std::vector<int>& replicas = costs.position_devices[d];
    const int r = static_cast<int>(replicas.size());
    if (r >= 2) busy += allreduce_ns(hardware.ring_link(replicas), gradient_bytes, r);
    bound = std::max(bound, chain + busy);
    if (d + 1 < schedule.positions()) chain += costs.stages[d].forward_ns + hop_ns(costs, hardware, d);
  }
  return bound;
}

namespace {

// The objective: longest device span, then the step from time 0.
struct Score {
  int64_t span = -1, step = -1;
  bool valid() const { return span >= 0; }
  bool operator<(const Score& o) const { return std::tie(span, step) < std::tie(o.span, o.step); }
};

class Search {
 public:
  // `budget` simulations at most: a count, not a clock, so the result never depends on the machine.
  Search(const CostModel& c, const Hardware& h, int cap, int M, const ZeroBubbleSearchOptions& o)
      : c_(c), h_(h), cap_(cap), M_(M), budget_(std::max(1, o.max_evaluations)),
        order_budget_(std::max(0, o.max_order_evaluations)), bytes_(o.activation_budget_bytes), p2p_(o.p2p),
        runtime_(o.runtime) {
    K_ = static_cast<int>(c.position_device.size());
    base_ = ListPolicy::unit(stage_position_map(ScheduleKind::ZeroBubbleAuto, K_, 1), M);
    for (int s = 0; s < K_; ++s) {
      base_.forward_ns[s] = c.stages[s].forward_ns;
      base_.input_ns[s] = c.stages[s].backward_input_ns;
      base_.weight_ns[s] = c.stages[s].backward_weight_ns;
      if (s + 1 < K_) base_.hop_ns = std::max(base_.hop_ns, hop_ns(c, h, s));
      if (!bytes_.empty()) {
        base_.stash_bytes.push_back(c.stages[s].activation_bytes);
        base_.freed_at_input_bytes.push_back(c.stages[s].freed_at_input_bytes);
      }
    }
    base_.max_bytes = bytes_;
  }

  // Whether `s` keeps every device within the byte budget (always, without one).
  bool within_bytes(const Schedule& s) const {
    if (bytes_.empty()) return true;
    const std::vector<int64_t> peaks = peak_stash_bytes(s, c_);
    for (std::size_t d = 0; d < peaks.size(); ++d) {
      if (peaks[d] > bytes_[d]) return false;
    }
    return true;
  }

  // (longest span, step) of `s` from one timeline-free simulation, with each op's start
  // in `starts` (flat: device by device); invalid when the budget is spent, the order
  // holds more than the cap or cannot finish.
  Score score(const Schedule& s, std::vector<int64_t>& starts) {
    if (evaluations_ >= budget_ || max_alive_microbatches(s) > cap_ || !within_bytes(s)) return {};
    ++evaluations_;
    SimOptions o;
    o.record_timeline = false;
    o.op_starts_ns = &starts;
    o.p2p = p2p_;
    o.runtime = runtime_;
    StepReport r;
    try {
      r = simulate(s, c_, h_, o);
    } catch (const InputError&) {  // an order move that deadlocks
      return {};
    }
    Score out{0, r.step_ns};
    std::size_t flat = 0;
    for (const auto& ops : s.position_ops) {
      if (ops.empty()) continue;
      const Op& last = ops.back();
      const int64_t end = starts[flat + ops.size() - 1] + op_duration_ns(last.kind, c_.stages[last.stage]);
      out.span = std::max(out.span, end - starts[flat]);
      flat += ops.size();
    }
    return out;
  }

  // Keeps `s` when it is the best so far; a list policy also when it is the best list
  // policy so far (the policy search starts from that one).
  void offer(const Schedule& s, const std::string& label, const ListPolicy* policy) {
    std::vector<int64_t> starts;
    const Score sc = score(s, starts);
    if (!sc.valid()) return;
    if (policy && (!policy_score_.valid() || sc < policy_score_)) {
      policy_score_ = sc;
      best_policy_ = *policy;
      policy_label_ = label;
    }
    if (best_score_.valid() && !(sc < best_score_)) return;
    best_score_ = sc;
    best_ = s;
    best_starts_ = std::move(starts);
    best_label_ = label;
  }

  ListPolicy policy(int depth_kind, bool forward_first, bool lookahead) const {
    ListPolicy p = base_;
    p.forward_first = forward_first;
    p.weight_lookahead = lookahead;
    for (int d = 0; d < K_; ++d) {
      // Under a byte budget the deepest warm-up is as many whole stashes as it holds.
      const int fit = bytes_.empty() || c_.stages[d].activation_bytes <= 0
                          ? cap_
                          : static_cast<int>(std::min<int64_t>(cap_, bytes_[d] / c_.stages[d].activation_bytes));
      const int depth = depth_kind == 0 ? K_ - d : depth_kind == 1 ? 2 * (K_ - d) - 1 : fit;
      p.max_alive[d] = std::min(cap_, M_);
      p.max_warmup[d] = std::max(1, std::min({depth, fit, M_}));
    }
    return p;
  }

  void constructive() {
    offer(make_zb_h2(K_, M_), "zb-h2", nullptr);
    offer(make_zb_h1(K_, M_), "zb-h1", nullptr);
    const char* depths[] = {"K-d", "2(K-d)-1", "N"};
    for (int depth : {1, 0, 2}) {  // ZB-H2's depth first: the likeliest winner on a short budget
      for (bool ff : {true, false}) {
        for (bool look : {false, true}) {
          if (evaluations_ >= budget_) return;  // building an order costs about a simulation
          const ListPolicy p = policy(depth, ff, look);
          offer(list_schedule(p, "zb-auto"), std::string("list warm-up ") + depths[depth] + (ff ? " F-first" : " I-first") +
                                                 (look ? " W-lookahead" : ""),
                &p);
        }
      }
    }
    offer(make_1f1b(K_, M_), "1f1b", nullptr);
    if (!best_score_.valid()) {
      throw InputError(bytes_.empty() ? "--max-inflight " + std::to_string(cap_) + ": no schedule fits"
                                      : "--activation-budget: no schedule fits the byte budget");
    }
  }

  // Coordinate descent on the per-device warm-up depth of the best list policy.
  void policy_search(int passes) {
    if (!policy_score_.valid()) return;
    for (int pass = 0; pass < passes; ++pass) {
      bool improved = false;
      for (int d = 0; d < K_; ++d) {
        for (int step : {+1, -1}) {
          if (evaluations_ >= budget_) return;
          ListPolicy p = best_policy_;
          p.max_warmup[d] += step;
          if (p.max_warmup[d] < 1 || p.max_warmup[d] > std::min(cap_, M_)) continue;
          const Score before = policy_score_;
          offer(list_schedule(p, "zb-auto"), with_tag(policy_label_, " + local search"), &p);
          improved |= policy_score_ < before;
        }
      }
      if (!improved) break;
    }
  }

  void order_search();

  Schedule result(ZeroBubbleSearchReport* report) {
    best_.name = "zb-auto";
    if (report) {
      report->span_ns = best_score_.span;
      report->step_ns = best_score_.step;
      int64_t bound = 0;
      for (const StageCost& st : c_.stages) bound = std::max(bound, M_ * work_ns(st));
      report->bound_ns = bound;
      report->cap_bound_ns = zero_bubble_cap_bound_ns(c_, h_, cap_, M_, bytes_.empty() ? 0 : bytes_.back());
      report->peak_stash_bytes = peak_stash_bytes(best_, c_);
      report->evaluations = evaluations_;
      report->order_moves = order_moves_;
      report->start = best_label_;
    }
    return std::move(best_);
  }

 private:
  static std::string with_tag(const std::string& label, const std::string& tag) {
    const bool has = label.size() >= tag.size() && label.compare(label.size() - tag.size(), tag.size(), tag) == 0;
    return has ? label : label + tag;
  }

  struct Move {
    int device;
    std::size_t from, to;  // op index on the device, and where it goes (to < from)
  };
  std::pair<int, std::size_t> critical_device() const;
  std::vector<Move> moves_for_gap(int d, std::size_t i) const;
  bool try_move(int d, std::size_t from, std::size_t to);

  const CostModel& c_;
  const Hardware& h_;
  const int cap_, M_;
  int budget_;
  const int order_budget_;
  const std::vector<int64_t> bytes_;  // per device: the byte budget (empty: none)
  const P2p p2p_;                     // how each candidate's transfers meet compute
  const RuntimeCosts* runtime_;       // charged in each candidate's simulation (null: none)
  int K_ = 0;
  ListPolicy base_, best_policy_;
  Schedule best_;
  std::vector<int64_t> best_starts_;  // per op of best_, flat
  std::string best_label_, policy_label_;
  Score best_score_, policy_score_;
  int evaluations_ = 0, order_moves_ = 0;
};

// Moves device d's op at index `from` to index `to` (< from) of the best order; kept
// when it is valid (it passes no op of its own stage and micro-batch, holds at most the
// cap and finishes) and strictly better.
bool Search::try_move(int d, std::size_t from, std::size_t to) {
  const std::vector<Op>& now = best_.position_ops[d];
  for (std::size_t k = to; k < from; ++k) {  // never ahead of its own F (or I, for a W)
    if (now[k].stage == now[from].stage && now[k].microbatch == now[from].microbatch) return false;
  }
  Schedule s = best_;
  std::vector<Op>& ops = s.position_ops[d];
  const Op op = ops[from];
  ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(from));
  ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(to), op);
  const Score before = best_score_;
  offer(s, with_tag(best_label_, " + order search"), nullptr);
  if (!(best_score_ < before)) return false;
  ++order_moves_;
  return true;
}

// The device with the longest span in the best order (ties: the lowest index), and the
// flat index of its first op; -1 when no device has ops.
std::pair<int, std::size_t> Search::critical_device() const {
  std::size_t flat = 0, first = 0;
  int critical = -1;
  int64_t longest = -1;
  for (int d = 0; d < K_; ++d) {
    const auto& ops = best_.position_ops[d];
    if (!ops.empty()) {
      const int64_t end = best_starts_[flat + ops.size() - 1] + op_duration_ns(ops.back().kind, c_.stages[ops.back().stage]);
      if (end - best_starts_[flat] > longest) longest = end - best_starts_[flat], critical = d, first = flat;
    }
    flat += ops.size();
  }
  return {critical, first};
}

// The moves that may close the gap before device d's op i, in the order tried:
//   fill: the next W (its I already before the gap), the next I (its F before the gap)
//         or the next F of device d, moved to just before op i;
//   feed: the op on a neighbour that sends op i its input (F(s-1, m) for F(s, m), the
//         backward of s+1 for I or B(s, m)) moved one place earlier, or before the W
//         nearest before it.
// Same-kind ops of one stage never pass each other, so micro-batches keep their order.
std::vector<Search::Move> Search::moves_for_gap(int d, std::size_t i) const {
  std::vector<Move> out;
  const std::vector<Op>& ops = best_.position_ops[d];
  auto before = [](const std::vector<Op>& list, std::size_t end, const Op& op) {
    return std::find(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(end), op) != list.begin() + static_cast<std::ptrdiff_t>(end);
  };
  for (OpKind kind : {OpKind::BackwardWeight, OpKind::BackwardInput, OpKind::Forward}) {
    std::size_t j = i;
    while (j < ops.size() && ops[j].kind != kind) ++j;
    if (j == i || j == ops.size()) continue;
    const OpKind needs = kind == OpKind::BackwardWeight ? OpKind::BackwardInput : OpKind::Forward;
    if (kind != OpKind::Forward && !before(ops, i, Op{needs, ops[j].stage, ops[j].microbatch})) continue;
    out.push_back({d, j, i});
  }
  const Op& x = ops[i];
  Op producer = x;
  if (x.kind == OpKind::Forward && x.stage > 0) {
    producer.stage = x.stage - 1;
  } else if ((x.kind == OpKind::BackwardInput || x.kind == OpKind::Backward) && x.stage + 1 < static_cast<int>(best_.stage_position.size())) {
    producer.stage = x.stage + 1;
  } else {
    return out;
  }
  const int n = best_.stage_position[producer.stage];
  const std::vector<Op>& theirs = best_.position_ops[n];
  const auto at = std::find(theirs.begin(), theirs.end(), producer);
  if (at == theirs.end() || at == theirs.begin()) return out;
  const std::size_t p = static_cast<std::size_t>(at - theirs.begin());
  auto passes = [&](std::size_t k) { return !(theirs[k].kind == producer.kind && theirs[k].stage == producer.stage); };
  if (passes(p - 1)) out.push_back({n, p, p - 1});
  for (std::size_t k = p - 1; k-- > 0;) {
    if (!passes(k + 1)) break;
    if (theirs[k].kind == OpKind::BackwardWeight) {
      if (k + 1 != p - 1 || !passes(p - 1)) out.push_back({n, p, k});
      break;
    }
  }
  return out;
}

// Fill or feed the idle gaps of the device with the longest span, largest gap first,
// keeping the first move that strictly improves the objective, until none does or the
// budget is spent.
void Search::order_search() {
  budget_ = evaluations_ + order_budget_;
  for (bool improved = true; improved && evaluations_ < budget_;) {
    improved = false;
    const auto [critical, first] = critical_device();
    if (critical < 0) return;
    const std::vector<Op>& ops = best_.position_ops[critical];
    std::vector<std::pair<int64_t, std::size_t>> gaps;  // (-length, index of the op after the gap)
    for (std::size_t i = 1; i < ops.size(); ++i) {
      const int64_t end = best_starts_[first + i - 1] + op_duration_ns(ops[i - 1].kind, c_.stages[ops[i - 1].stage]);
      if (best_starts_[first + i] > end) gaps.push_back({end - best_starts_[first + i], i});
    }
    std::sort(gaps.begin(), gaps.end());
    for (const auto& gap : gaps) {
      for (const Move& m : moves_for_gap(critical, gap.second)) {
        if (evaluations_ >= budget_) return;
        if ((improved = try_move(m.device, m.from, m.to))) break;
      }
      if (improved) break;
    }
  }
}

}  // namespace

namespace {

// A byte budget is >= 0 and holds one micro-batch's stash of every stage on its device.
void check_budget(const CostModel& c, const std::vector<int64_t>& budget) {
  if (budget.empty()) return;
  if (budget.size() != c.position_device.size()) {
    throw InputError("--activation-budget: expected one budget per device (" + std::to_string(c.position_device.size()) +
                     "), got " + std::to_string(budget.size()));
  }
  for (std::size_t d = 0; d < budget.size(); ++d) {
    if (budget[d] < 0) {
      throw InputError("--activation-budget: expected a number of bytes >= 0, got " + std::to_string(budget[d]));
    }
    const int64_t stash = c.stages[d].activation_bytes;
    if (budget[d] < stash) {
      throw InputError("--activation-budget: " + std::to_string(budget[d]) + " bytes is below one micro-batch's stash on " +
                       "device " + std::to_string(d) + " (" + std::to_string(stash) + " bytes of activations)");
    }
  }
}

}  // namespace

Schedule search_zero_bubble(const CostModel& costs, const Hardware& hardware, int max_inflight, int microbatches,
                            ZeroBubbleSearchReport* report, const ZeroBubbleSearchOptions& options) {
  if (max_inflight < 1) {
    throw InputError("--max-inflight: expected at least 1 micro-batch alive per stage, got " + std::to_string(max_inflight));
  }
  if (costs.stages.size() != costs.position_device.size()) {
    throw InputError("zb-auto: expected one stage per device (1 chunk), got " + std::to_string(costs.stages.size()) +
                     " stages on " + std::to_string(costs.position_device.size()) + " devices");
  }
  check_schedule_spec({ScheduleKind::ZeroBubbleAuto, static_cast<int>(costs.stages.size()), microbatches, 1});
  check_budget(costs, options.activation_budget_bytes);
  // The byte budget counts what I frees as the runtime frees it (input_pass_freed_bytes);
  // the simulator's rule leaves these costs as they are, so every score is unchanged.
  CostModel counted = costs;
  for (std::size_t s = 0; s < counted.stages.size(); ++s) {
    counted.stages[s].freed_at_input_bytes = input_pass_freed_bytes(costs.stages[s], static_cast<int>(s), options.runtime);
  }
  Search search(counted, hardware, max_inflight, microbatches, options);
  search.constructive();
  search.policy_search(3);
  search.order_search();
  return search.result(report);
}

}  // namespace pipescope
