// The greedy list scheduler (see list_schedule.h). Every decision is made at an op's
// start from times already known then (an op's end and the arrival of its result are
// fixed when it starts), so the state is updated at starts only; a device decides
// only when it is idle. Ties: devices in index order, deeper stages first.
#include "core/schedules/list_schedule.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <queue>

#include "core/error.h"
#include "core/op_rules.h"

namespace pipescope {

ListPolicy ListPolicy::unit(std::vector<int> stage_position, int microbatches) {
  ListPolicy p;
  const int S = static_cast<int>(stage_position.size());
  int K = 0;
  for (int d : stage_position) K = std::max(K, d + 1);
  p.stage_position = std::move(stage_position);
  p.microbatches = microbatches;
  p.forward_ns.assign(S, 1);
  p.input_ns.assign(S, 1);
  p.weight_ns.assign(S, 1);
  p.max_alive.assign(K, microbatches * S);
  p.max_warmup.assign(K, microbatches * S);
  return p;
}

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

class ListScheduler {
 public:
  explicit ListScheduler(const ListPolicy& p)
      : p_(p), S_(static_cast<int>(p.stage_position.size())), M_(p.microbatches), K_(static_cast<int>(p.max_alive.size())) {
    for (int d = 0; d < K_; ++d) {
      if (p.max_alive[d] < 1 || p.max_warmup[d] < 1) {
        throw InputError("list schedule: device " + std::to_string(d) + " may hold no micro-batch (limit below 1)");
      }
    }
    for (int s = 0; s < S_ && !p.max_bytes.empty(); ++s) {
      if (p.stash_bytes[s] > p.max_bytes[p.stage_position[s]]) {
        throw InputError("list schedule: device " + std::to_string(p.stage_position[s]) +
                         "'s byte budget holds no micro-batch of stage " + std::to_string(s));
      }
    }
    stages_of_.resize(K_);
    for (int s = S_ - 1; s >= 0; --s) stages_of_[p.stage_position[s]].push_back(s);  // deeper first
    const auto table = std::vector<int64_t>(static_cast<std::size_t>(S_) * M_, kNever);
    f_end_ = f_out_ = i_out_ = table;
    next_f_.assign(S_, 0);
    next_i_.assign(S_, 0);
    alive_.assign(K_, 0);
    bytes_.assign(K_, 0);
    warm_.assign(K_, 0);
    free_at_.assign(K_, 0);
    pending_w_.resize(K_);
  }

  std::vector<std::vector<Op>> run() {
    std::vector<std::vector<Op>> ops(K_);
    int64_t left = 3 * static_cast<int64_t>(S_) * M_;
    is_woken_.assign(K_, 0);
    for (int d = 0; d < K_; ++d) wake(d, 0);  // at time 0 every device decides
    while (left > 0) {
      // Passes over the woken devices in index order, again while one moved (a zero-time
      // op may wake a device at `now_`): the same decisions as passes over all devices,
      // since a device nothing happened to since it last could not move still cannot.
      for (bool moved = true; moved;) {
        moved = false;
        for (cursor_ = 0; cursor_ < woken_.size(); ++cursor_) {
          const int d = woken_[cursor_];
          Op op{OpKind::Forward, -1, -1};
          if (free_at_[d] > now_ || !pick(d, now_, op)) continue;
          start(d, now_, op);
          ops[d].push_back(op);
          --left;
          moved = true;
        }
      }
      if (left == 0) break;
      if (events_.empty()) throw InputError("list schedule: no device can move (the limits deadlock)");
      for (int d : woken_) is_woken_[d] = 0;
      woken_.clear();
      now_ = events_.top().first;
      while (!events_.empty() && events_.top().first == now_) {
        wake(events_.top().second, now_);
        events_.pop();
      }
    }
    return ops;
  }

 private:
  std::size_t at(int s, int m) const { return static_cast<std::size_t>(s) * M_ + m; }

  // When a result that `op` needs (core/op_rules.h's op_needs) is on op's device: its
  // own stage's output when that F ends, a neighbour's after the hop (kNever: not made).
  int64_t arrival(const Need& n, const Op& op) const {
    const std::size_t i = at(n.stage, op.microbatch);
    if (n.product == Product::Output) return n.stage == op.stage ? f_end_[i] : f_out_[i];
    return i_out_[i];  // Product::InputGradient (list schedules carry no R)
  }
  // When every input of `op` is on its device.
  int64_t inputs_ready_at(const Op& op) const {
    int64_t t = 0;
    for (const Need& n : op_needs(op, S_, false)) t = std::max(t, arrival(n, op));
    return t;
  }

  bool forward_ready(int d, int s, int64_t now) const {
    const int m = next_f_[s];
    return m < M_ && alive_[d] < p_.max_alive[d] && warm_[d] < p_.max_warmup[d] &&
           (p_.max_bytes.empty() || bytes_[d] + p_.stash_bytes[s] <= p_.max_bytes[d]) &&
           inputs_ready_at({OpKind::Forward, s, m}) <= now;
  }
  bool input_ready(int s, int64_t now) const {
    const int m = next_i_[s];
    return m < M_ && inputs_ready_at({OpKind::BackwardInput, s, m}) <= now;
  }
  // W needs its own I (op_needs), whose end the queue entry records.
  bool weight_ready(int d, int64_t now) const {
    return !pending_w_[d].empty() && pending_w_[d].front().second <= now;
  }

  // Whether an I of device d becomes ready (its inputs already on their way) before `t`.
  bool input_due_before(int d, int64_t t) const {
    for (int s : stages_of_[d]) {
      const int m = next_i_[s];
      if (m < M_ && inputs_ready_at({OpKind::BackwardInput, s, m}) < t) return true;
    }
    return false;
  }

  bool pick(int d, int64_t now, Op& op) const {
    const bool w = weight_ready(d, now);
    if (w && !p_.defer_weight) {
      op = {OpKind::BackwardWeight, pending_w_[d].front().first.stage, pending_w_[d].front().first.microbatch};
      return true;
    }
    auto try_forward = [&] {
      for (int s : stages_of_[d]) {
        if (forward_ready(d, s, now)) return op = {OpKind::Forward, s, next_f_[s]}, true;
      }
      return false;
    };
    auto try_input = [&] {
      for (int s : stages_of_[d]) {
        if (input_ready(s, now)) return op = {OpKind::BackwardInput, s, next_i_[s]}, true;
      }
      return false;
    };
    if (p_.forward_first ? try_forward() || try_input() : try_input() || try_forward()) return true;
    if (w && p_.weight_lookahead && input_due_before(d, now + p_.weight_ns[pending_w_[d].front().first.stage])) {
      return false;
    }
    if (w) op = {OpKind::BackwardWeight, pending_w_[d].front().first.stage, pending_w_[d].front().first.microbatch};
    return w;
  }

  void start(int d, int64_t now, const Op& op) {
    const int s = op.stage, m = op.microbatch;
    auto crosses = [&](int other) { return other >= 0 && other < S_ && p_.stage_position[other] != d; };
    int64_t end = now;
    switch (op.kind) {
      case OpKind::Forward:
        end = now + p_.forward_ns[s];
        f_end_[at(s, m)] = end;
        f_out_[at(s, m)] = end + (crosses(s + 1) ? p_.hop_ns : 0);
        wake(crosses(s + 1) ? p_.stage_position[s + 1] : d, f_out_[at(s, m)]);
        ++next_f_[s];
        ++alive_[d];
        ++warm_[d];
        if (!p_.max_bytes.empty()) bytes_[d] += p_.stash_bytes[s];
        break;
      case OpKind::BackwardInput:
        end = now + p_.input_ns[s];
        i_out_[at(s, m)] = end + (crosses(s - 1) ? p_.hop_ns : 0);
        wake(crosses(s - 1) ? p_.stage_position[s - 1] : d, i_out_[at(s, m)]);
        ++next_i_[s];
        --warm_[d];
        pending_w_[d].push_back({op, end});
        if (!p_.max_bytes.empty()) bytes_[d] -= p_.freed_at_input_bytes[s];  // the device is busy until I's end
        break;
      default:
        end = now + p_.weight_ns[s];
        pending_w_[d].pop_front();
        --alive_[d];  // freed at W's end; the device decides again only then
        if (!p_.max_bytes.empty()) bytes_[d] -= p_.stash_bytes[s] - p_.freed_at_input_bytes[s];
        break;
    }
    free_at_[d] = end;
    wake(d, end);
  }

  const ListPolicy& p_;
  const int S_, M_, K_;
  std::vector<std::vector<int>> stages_of_;
  std::vector<int64_t> f_end_, f_out_, i_out_;
  std::vector<int> next_f_, next_i_, alive_, warm_;
  std::vector<int64_t> bytes_;  // per device: stash bytes held (with a byte budget)
  std::vector<int64_t> free_at_;
  std::vector<std::deque<std::pair<Op, int64_t>>> pending_w_;  // I done: (W op, when its I ends)
  // When something happens to a device (it frees, an input of its stages arrives): it
  // decides again then. At `now_` the device joins woken_, which the current passes visit.
  // A device woken during a pass is visited later in it when its index is higher (as
  // a pass over all devices would), else in the next pass.
  void wake(int d, int64_t t) {
    if (t > now_) {
      events_.push({t, d});
      return;
    }
    if (is_woken_[d]) return;
    is_woken_[d] = 1;
    const auto at = std::lower_bound(woken_.begin(), woken_.end(), d);
    if (static_cast<std::size_t>(at - woken_.begin()) <= cursor_ && cursor_ < woken_.size()) ++cursor_;
    woken_.insert(at, d);
  }
  int64_t now_ = 0;
  std::vector<int> woken_;       // devices that decide at now_, in index order
  std::vector<char> is_woken_;   // per device: in woken_
  std::size_t cursor_ = 0;       // the current pass's place in woken_
  std::priority_queue<std::pair<int64_t, int>, std::vector<std::pair<int64_t, int>>, std::greater<>> events_;
};

}  // namespace

Schedule list_schedule(const ListPolicy& policy, const std::string& name) {
  const std::size_t S = policy.stage_position.size();
  if (S == 0 || policy.microbatches < 1 || policy.forward_ns.size() != S || policy.input_ns.size() != S ||
      policy.weight_ns.size() != S || policy.max_alive.size() != policy.max_warmup.size() ||
      (!policy.max_bytes.empty() && (policy.max_bytes.size() != policy.max_alive.size() ||
                                     policy.stash_bytes.size() != S || policy.freed_at_input_bytes.size() != S))) {
    throw InputError("list schedule: inconsistent policy");
  }
  Schedule s;
  s.name = name;
  s.num_microbatches = policy.microbatches;
  s.stage_position = policy.stage_position;
  s.position_ops = ListScheduler(policy).run();
  return s;
}

}  // namespace pipescope
