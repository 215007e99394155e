// DagStageCosts: StageModel's cost rules restated per layer, so that a stage that is
// any downset difference (not only a contiguous range) is costed by sums; the brute
// force over monotone labellings; and reordering a profile. Invariant: time_ns and
// memory_bytes here are the exact numbers the lattice search optimises.
#include <algorithm>
#include <functional>
#include <numeric>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/op_rules.h"
#include "planner/dag_partition.h"

namespace pipescope {

DagStageCosts::DagStageCosts(const Profile& profile, const Hardware& hardware, const Schedule& schedule,
                             const StageModelSpec& spec, const StageModel& model)
    : L_(profile.num_layers()),
      S_(schedule.stages()),
      r_ops_(schedule.r_ops),
      constrain_(spec.constrain_memory && schedule.stages() == schedule.positions() && hardware.memory_bytes > 0),
      limit_(hardware.memory_bytes),
      edges_(profile.graph_edges()) {
  check_stage_count(L_, S_);
  const int r = spec.replicas;
  const int64_t M = schedule.microbatches();
  const double b = spec.microbatch_size / r;
  has_consumer_.assign(static_cast<std::size_t>(L_), 0);
  for (auto [from, to] : edges_) {
    if (from >= to) throw InputError(profile.source, "edges", "the layers must be in a topological order");
    has_consumer_[from] = 1;
  }
  for (int l = 0; l < L_; ++l) {
    forward_ms_.push_back(profile.forward_ms(l, b));
    backward_ms_.push_back(profile.backward_ms(l, b));
    activation_.push_back(profile.activation_bytes(l, b));
    output_.push_back(profile.output_bytes(l, b));
    static_.push_back(pipescope::static_bytes(profile.layers[l].parameter_bytes, spec.optimizer_state_factor));
  }
  auto first_device = [&](int stage) { return schedule.stage_position[stage] * r; };
  for (int s = 0; s < S_; ++s) {
    std::vector<int> ring;
    for (int d = first_device(s); d < first_device(s) + r; ++d) ring.push_back(d);
    speed_.push_back(slowest_speed(hardware, ring));
    // The stage's ring all-reduce (core/op_rules.h), spread over its M micro-batches:
    // the latency per stage, the traffic per layer.
    const Link ring_link = hardware.ring_link(ring);
    allreduce_latency_ns_.push_back(ring_allreduce_hops(r) * ring_link.latency_ns() / M);
    for (int l = 0; l < L_; ++l) {
      const int64_t grad = profile.layers[l].parameter_bytes;
      allreduce_busy_.push_back(r < 2 ? 0 : ring_link.busy_ns(ring_allreduce_bytes(grad, r)) / M);
    }
    sends_next_.push_back(s + 1 < S_ && schedule.stage_position[s + 1] != schedule.stage_position[s]);
    receives_prev_.push_back(s > 0 && schedule.stage_position[s - 1] != schedule.stage_position[s]);
    next_link_.push_back(sends_next_.back() ? hardware.link_between(first_device(s), first_device(s + 1)) : Link{});
    prev_link_.push_back(receives_prev_.back() ? hardware.link_between(first_device(s), first_device(s - 1)) : Link{});
    terms_.push_back(model.stage_memory_terms(s));
  }
}

int64_t DagStageCosts::compute_ns(int s, int l) const {
  const double speed = speed_[s];
  const int64_t fwd = ms_to_ns(speed == 1.0 ? forward_ms_[l] : forward_ms_[l] / speed);
  const int64_t bwd = ms_to_ns(speed == 1.0 ? backward_ms_[l] : backward_ms_[l] / speed);
  return fwd * (r_ops_ ? 2 : 1) + bwd + allreduce_busy_[static_cast<std::size_t>(s) * L_ + l];
}

int64_t DagStageCosts::granularity() const {
  for (int s = 0; s < S_; ++s) {
    if (allreduce_latency_ns_[s] != 0) return 1;
    if (sends_next_[s] && (next_link_[s].bandwidth_gb_per_s != 0 || next_link_[s].latency_us != 0)) return 1;
    if (receives_prev_[s] && (prev_link_[s].bandwidth_gb_per_s != 0 || prev_link_[s].latency_us != 0)) return 1;
  }
  int64_t g = 0;
  for (int s = 0; s < S_; ++s) {
    for (int l = 0; l < L_; ++l) g = std::gcd(g, compute_ns(s, l));
  }
  return std::max<int64_t>(g, 1);
}

int64_t DagStageCosts::send_next_ns(int s, int64_t bytes) const {
  return sends_next_[s] ? next_link_[s].busy_ns(bytes) + next_link_[s].latency_ns() : 0;
}

int64_t DagStageCosts::receive_prev_ns(int s, int64_t bytes) const {
  return receives_prev_[s] ? prev_link_[s].busy_ns(bytes) + prev_link_[s].latency_ns() : 0;
}

int64_t DagStageCosts::cut_bytes(const std::vector<uint8_t>& in) const {
  std::vector<uint8_t> crosses(static_cast<std::size_t>(L_), 0);
  for (auto [from, to] : edges_) crosses[from] = crosses[from] || (in[from] && !in[to]);
  int64_t bytes = 0;
  for (int l = 0; l < L_; ++l) bytes += crosses[l] ? output_bytes(l) : 0;
  return bytes;
}

int64_t DagStageCosts::time_ns(int s, const std::vector<uint8_t>& before, const std::vector<uint8_t>& through) const {
  int64_t t = stage_constant_ns(s);
  for (int l = 0; l < L_; ++l) t += (through[l] && !before[l]) ? compute_ns(s, l) : 0;
  return t + send_next_ns(s, cut_bytes(through)) + receive_prev_ns(s, cut_bytes(before));
}

int64_t DagStageCosts::memory_bytes(int s, const std::vector<uint8_t>& before, const std::vector<uint8_t>& through) const {
  int64_t stat = 0, act = 0;
  for (int l = 0; l < L_; ++l) {
    if (!through[l] || before[l]) continue;
    stat += static_[l];
    act += activation_[l];
  }
  const int64_t stash = r_ops_ ? cut_bytes(before) : act;
  int64_t peak = 0;
  for (auto [a, c] : terms_[s]) peak = std::max(peak, a * stash + c * act);
  return stat + peak;
}

int64_t brute_force_dag_optimum(const DagStageCosts& costs) {
  const int L = costs.layers(), S = costs.stages();
  std::vector<int> label(static_cast<std::size_t>(L), 0);
  int64_t best = kInfeasible;
  std::function<void(int)> assign = [&](int l) {
    if (l == L) {
      std::vector<int> count(static_cast<std::size_t>(S), 0);
      for (int x : label) ++count[x];
      if (std::count(count.begin(), count.end(), 0) > 0) return;
      int64_t worst = 0;
      for (int s = 0; s < S && worst < best; ++s) {
        std::vector<uint8_t> before(static_cast<std::size_t>(L)), through(static_cast<std::size_t>(L));
        for (int k = 0; k < L; ++k) {
          before[k] = label[k] < s;
          through[k] = label[k] <= s;
        }
        if (costs.memory_limit() > 0 && costs.memory_bytes(s, before, through) > costs.memory_limit()) return;
        worst = std::max(worst, costs.time_ns(s, before, through));
      }
      best = std::min(best, worst);
      return;
    }
    int lowest = 0;  // a layer's stage is at least each of its inputs' stages
    for (auto [from, to] : costs.edges()) {
      if (to == l) lowest = std::max(lowest, label[from]);
    }
    for (int s = lowest; s < S; ++s) {
      label[l] = s;
      assign(l + 1);
    }
  };
  assign(0);
  return best;
}

}  // namespace pipescope
