// Invariant: memory_bytes() follows core/cost_model.h's accounting with the same
// integer roundings as sim/simulator.cpp, so a partition that fits here fits there.
#include "planner/stage_model.h"

#include <algorithm>
#include <functional>
#include <set>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/op_rules.h"
#include "planner/model_graph.h"

namespace pipescope {
namespace {

// (stashed, re-materialised) micro-batches the stage holds at each op start of its
// device's list, keeping only the pairs no other pair dominates.
std::vector<std::pair<int64_t, int64_t>> memory_terms(const Schedule& schedule, int stage) {
  const int device = schedule.stage_position[stage];
  const int M = schedule.microbatches();
  // What each micro-batch holds now, in (stash, activations) units (core/op_rules.h).
  std::vector<std::pair<int64_t, int64_t>> held(static_cast<std::size_t>(M), {0, 0});
  int64_t stashed = 0, rematerialised = 0;
  std::vector<std::pair<int64_t, int64_t>> seen;
  for (const Op& op : schedule.position_ops[device]) {
    if (op.stage != stage) continue;
    auto& mine = held[op.microbatch];
    switch (op_charge(op.kind)) {
      case Charge::Stash: ++stashed, ++mine.first; break;
      case Charge::Activations: ++rematerialised, ++mine.second; break;
      case Charge::Nothing: break;
    }
    if (op_charge(op.kind) != Charge::Nothing) seen.emplace_back(stashed, rematerialised);
    if (op_frees(op.kind)) {
      stashed -= mine.first;
      rematerialised -= mine.second;
      mine = {0, 0};
    }
  }
  std::sort(seen.begin(), seen.end(), [](auto x, auto y) { return x.first != y.first ? x.first > y.first : x.second > y.second; });
  std::vector<std::pair<int64_t, int64_t>> front;
  for (auto t : seen) {
    if (front.empty() || t.second > front.back().second) front.push_back(t);
  }
  return front;
}

// Under split backward with the profile's weight_grad_bytes: (stashed, re-materialised,
// past I) micro-batches the stage holds at each op start that charges, the last count
// being those whose I has freed what their W does not need (core/op_rules.h). Distinct
// triples only; memory_bytes takes the largest a x stash + c x activations - i x freed.
std::vector<std::array<int64_t, 3>> release_terms(const Schedule& schedule, int stage) {
  const int M = schedule.microbatches();
  std::vector<std::array<int64_t, 3>> held(static_cast<std::size_t>(M), {0, 0, 0});
  std::array<int64_t, 3> now{0, 0, 0};
  std::set<std::array<int64_t, 3>> seen;
  for (const Op& op : schedule.position_ops[schedule.stage_position[stage]]) {
    if (op.stage != stage) continue;
    auto& mine = held[op.microbatch];
    const Charge charge = op_charge(op.kind);
    if (charge != Charge::Nothing) {
      const int k = charge == Charge::Stash ? 0 : 1;
      ++now[k], ++mine[k];
      seen.insert(now);
    }
    if (op.kind == OpKind::BackwardInput) ++now[2], ++mine[2];
    if (op_frees(op.kind)) {
      for (int k = 0; k < 3; ++k) now[k] -= mine[k];
      mine = {0, 0, 0};
    }
  }
  return {seen.begin(), seen.end()};
}

// With transients (the profile's workspace_bytes): at each op start of the stage, how
// many micro-batches hold what F, R and I leave held (core/op_rules.h's OpMemory::held),
// and which op starts; the peak is the largest held sum plus that op's OpMemory::peak.
std::vector<std::array<int64_t, 4>> op_start_terms(const Schedule& schedule, int stage) {
  const int M = schedule.microbatches();
  std::vector<std::array<int64_t, 3>> held(static_cast<std::size_t>(M), {0, 0, 0});
  std::array<int64_t, 3> now{0, 0, 0};  // F, R, I
  std::set<std::array<int64_t, 4>> seen;
  for (const Op& op : schedule.position_ops[schedule.stage_position[stage]]) {
    if (op.stage != stage) continue;
    seen.insert({now[0], now[1], now[2], static_cast<int64_t>(op.kind)});
    auto& mine = held[op.microbatch];
    if (op_frees(op.kind)) {
      for (int k = 0; k < 3; ++k) now[k] -= mine[k];
      mine = {0, 0, 0};
      continue;
    }
    const int k = op.kind == OpKind::Forward ? 0 : op.kind == OpKind::Recompute ? 1 : 2;
    ++now[k], ++mine[k];
  }
  return {seen.begin(), seen.end()};
}

int64_t transfer_ns(const Link& link, int64_t bytes) { return link.busy_ns(bytes) + link.latency_ns(); }

}  // namespace

StageModel::StageModel(const Profile& profile, const Hardware& hardware, const Schedule& schedule,
                       const StageModelSpec& spec)
    : L_(profile.num_layers()),
      S_(schedule.stages()),
      K_(schedule.positions()),
      M_(schedule.microbatches()),
      chunks_(std::max(1, schedule.stages() / schedule.positions())),
      replicas_(spec.replicas),
      r_ops_(schedule.r_ops),
      constrain_(spec.constrain_memory && schedule.stages() == schedule.positions()),
      limit_(hardware.memory_bytes),
      optimizer_factor_(spec.optimizer_state_factor),
      runtime_(spec.runtime) {
  check_stage_count(L_, S_);
  if (replicas_ < 1) throw InputError("replicas: expected at least 1, got " + std::to_string(replicas_));
  if (static_cast<int64_t>(K_) * replicas_ > hardware.devices) {
    throw InputError(hardware.source, "devices", "a plan of " + std::to_string(K_) + " stages x " +
                                                     std::to_string(replicas_) + " replicas needs " +
                                                     std::to_string(K_ * replicas_) + " devices, the hardware has " +
                                                     std::to_string(hardware.devices));
  }
  const double b = spec.microbatch_size / replicas_;
  forward_ms_.assign(L_ + 1, 0.0);
  backward_ms_.assign(L_ + 1, 0.0);
  activation_.assign(L_ + 1, 0);
  freed_.assign(L_ + 1, 0);
  shared_.assign(L_, 0);
  parameters_.assign(L_ + 1, 0);
  for (int l = 0; l < L_; ++l) {
    shared_[l] = profile.shared_with_next_bytes(l, b);
    forward_ms_[l + 1] = forward_ms_[l] + profile.forward_ms(l, b);
    backward_ms_[l + 1] = backward_ms_[l] + profile.backward_ms(l, b);
    activation_[l + 1] = activation_[l] + profile.activation_bytes(l, b) - shared_[l];
    freed_[l + 1] = freed_[l] + profile.activation_bytes(l, b) - profile.weight_grad_bytes(l, b) - shared_[l];
    parameters_[l + 1] = parameters_[l] + profile.layers[l].parameter_bytes;
  }
  cut_ = cut_bytes(profile, b);
  loss_bytes_ = profile.loss_bytes(b);
  if (profile.has_workspace()) {
    for (int l = 0; l < L_; ++l) {
      const LayerWorkspace& w = profile.layers[l].workspace;
      auto at = [&](const std::vector<double>& v) { return std::llround(profile.interpolate(v, b)); };
      layer_bytes_.push_back({at(w.input), profile.output_bytes(l, b), profile.activation_bytes(l, b), at(w.forward),
                              at(w.forward_no_grad), at(w.backward_input), at(w.backward_weight),
                              at(w.held_for_weight), profile.activation_bytes(l, b) - profile.weight_grad_bytes(l, b)});
    }
  }
  auto first_device = [&](int stage) { return schedule.stage_position[stage] * replicas_; };
  stage_device_ = schedule.stage_position;
  std::vector<Link> tabled;
  auto transfer_table = [&](const Link& link) {
    for (std::size_t k = 0; k < tabled.size(); ++k) {
      if (tabled[k].bandwidth_gb_per_s == link.bandwidth_gb_per_s && tabled[k].latency_us == link.latency_us) {
        return static_cast<int>(k);
      }
    }
    tabled.push_back(link);
    std::vector<int64_t> table;
    for (int64_t bytes : cut_) table.push_back(transfer_ns(link, bytes));
    transfer_ns_.push_back(std::move(table));
    return static_cast<int>(tabled.size()) - 1;
  };
  const bool releases = profile.has_weight_grad_bytes() && schedule.has_split_backward();
  for (int s = 0; s < S_; ++s) {
    std::vector<int> replicas;
    for (int d = first_device(s); d < first_device(s) + replicas_; ++d) replicas.push_back(d);
    speed_.push_back(slowest_speed(hardware, replicas));
    const bool next = s + 1 < S_ && schedule.stage_position[s + 1] != schedule.stage_position[s];
    const bool prev = s > 0 && schedule.stage_position[s - 1] != schedule.stage_position[s];
    next_table_.push_back(next ? transfer_table(hardware.link_between(first_device(s), first_device(s + 1))) : -1);
    prev_table_.push_back(prev ? transfer_table(hardware.link_between(first_device(s), first_device(s - 1))) : -1);
    terms_.push_back(memory_terms(schedule, s));
    if (profile.has_workspace()) op_terms_.push_back(op_start_terms(schedule, s));
    int64_t factor = 0;
    if (releases) {
      // a x stash + c x act - i x freed >= (a [no recompute] + c - i) x act, as freed <= act.
      release_terms_.push_back(release_terms(schedule, s));
      for (const auto& t : release_terms_.back()) factor = std::max(factor, (r_ops_ ? 0 : t[0]) + t[1] - t[2]);
    } else {
      for (auto [a, c] : terms_.back()) factor = std::max(factor, (r_ops_ ? 0 : a) + c);
    }
    bound_factor_.push_back(factor);
  }
  for (int s = 0; s < S_; ++s) {
    std::vector<int> ring;
    for (int d = first_device(s); d < first_device(s) + replicas_; ++d) ring.push_back(d);
    ring_link_.push_back(hardware.ring_link(ring));
  }
}

int64_t StageModel::compute_ns(int s, int i, int j) const {
  double f = forward_ms_[j] - forward_ms_[i];
  double bw = backward_ms_[j] - backward_ms_[i];
  if (speed_[s] != 1.0) {
    f /= speed_[s];
    bw /= speed_[s];
  }
  const int64_t fwd = ms_to_ns(f);
  return fwd + ms_to_ns(bw) + (r_ops_ ? fwd : 0);
}

int64_t StageModel::allreduce_ns(int s, int i, int j) const {
  return pipescope::allreduce_ns(ring_link_[s], parameters_[j] - parameters_[i], replicas_);
}

int64_t StageModel::time_bound_ns(int s, int i, int j) const {
  return compute_ns(s, i, j) + allreduce_ns(s, i, j) / M_;
}

int64_t StageModel::time_ns(int s, int i, int j) const {
  int64_t t = time_bound_ns(s, i, j);
  if (next_table_[s] >= 0) t += transfer_ns_[next_table_[s]][j];
  if (prev_table_[s] >= 0) t += transfer_ns_[prev_table_[s]][i];
  return t;
}

int64_t StageModel::input_freed(int s, int i, int j) const {
  return input_pass_freed_bytes(freed(i, j), j == L_ ? loss_bytes_ : 0, s == 0, runtime_);
}

int64_t StageModel::memory_bytes(int s, int i, int j) const {
  const int64_t stat = static_bytes(parameters_[j] - parameters_[i], optimizer_factor_);
  const int64_t act = stash(i, j);
  const int64_t kept = r_ops_ ? cut_[i] : act;  // what F keeps: the stash, or the input under R
  int64_t peak = 0;
  if (!layer_bytes_.empty()) return stat + transient_peak(s, i, j);
  if (!release_terms_.empty()) {
    const int64_t released = input_freed(s, i, j);
    for (const auto& t : release_terms_[s]) peak = std::max(peak, t[0] * kept + t[1] * act - t[2] * released);
    return stat + peak;
  }
  for (auto [a, c] : terms_[s]) peak = std::max(peak, a * kept + c * act);
  return stat + peak;
}

int64_t StageModel::transient_peak(int s, int i, int j) const {
  std::vector<LayerBytes> layers(layer_bytes_.begin() + i, layer_bytes_.begin() + j);
  for (int l = i; l + 1 < j; ++l) hold_shared_once(layers[static_cast<std::size_t>(l - i)], shared_[l]);
  const StageMemory m = pipescope::stage_memory(layers, i == 0, j == L_, r_ops_);
  // What the runtime's I keeps of what the profile's frees stays held until W, and I's own
  // peak is that much higher (the simulator's charge_runtime).
  const int64_t kept = freed(i, j) - input_freed(s, i, j);
  const int64_t held[3] = {m.of(OpKind::Forward).held, m.of(OpKind::Recompute).held,
                           m.of(OpKind::BackwardInput).held + kept};
  int64_t peak = allreduce_buffer_bytes(parameters_[j] - parameters_[i], replicas_);
  for (const auto& t : op_terms_[s]) {
    const auto kind = static_cast<OpKind>(t[3]);
    peak = std::max(peak, t[0] * held[0] + t[1] * held[1] + t[2] * held[2] + m.of(kind).peak +
                              (kind == OpKind::BackwardInput ? kept : 0));
  }
  return peak;
}

int64_t StageModel::memory_bound_bytes(int s, int i, int j) const {
  const int64_t stat = static_bytes(parameters_[j] - parameters_[i], optimizer_factor_);
  return stat + bound_factor_[s] * stash(i, j);
}

int64_t StageModel::bottleneck_ns(const LayerRanges& ranges) const {
  std::vector<int64_t> device(static_cast<std::size_t>(K_), 0);  // a device's chunks add up
  for (int s = 0; s < static_cast<int>(ranges.size()); ++s) {
    device[stage_device_[s]] += time_ns(s, ranges[s].first, ranges[s].second);
  }
  return *std::max_element(device.begin(), device.end());
}

std::vector<int64_t> StageModel::stage_memory(const LayerRanges& ranges) const {
  std::vector<int64_t> out;
  for (int s = 0; s < static_cast<int>(ranges.size()); ++s) out.push_back(memory_bytes(s, ranges[s].first, ranges[s].second));
  return out;
}

MinMaxResult optimal_partition(const StageModel& m) {
  const bool limited = m.constrains_memory();
  auto cost = [&](int s, int i, int j) {
    if (limited && !m.fits(s, i, j)) return kInfeasible;
    return m.time_ns(s, i, j);
  };
  auto bound = [&](int s, int i, int j) {
    if (limited && m.memory_bound_bytes(s, i, j) > m.memory_limit()) return kInfeasible;
    return m.time_bound_ns(s, i, j);
  };
  return min_max_partition(m.layers(), m.stages(), cost, bound);
}

LayerRanges balance_devices(const StageModel& m, LayerRanges ranges) {
  const int S = static_cast<int>(ranges.size());
  if (m.memory_exact() || S < 2) return ranges;
  auto loads = [&](const LayerRanges& r) {  // device times, largest first
    std::vector<int64_t> device(static_cast<std::size_t>(m.positions()), 0);
    for (int s = 0; s < S; ++s) device[m.stage_position(s)] += m.time_ns(s, r[s].first, r[s].second);
    std::sort(device.begin(), device.end(), std::greater<>());
    return device;
  };
  std::vector<int64_t> best = loads(ranges);
  for (int64_t moves = 0, limit = 8LL * m.layers() * S; moves < limit;) {
    bool moved = false;
    for (int b = 1; b < S && moves < limit; ++b) {  // the boundary between stages b - 1 and b
      for (int step : {-1, +1}) {
        LayerRanges next = ranges;
        next[b - 1].second += step;
        next[b].first += step;
        if (next[b - 1].second <= next[b - 1].first || next[b].first >= next[b].second) continue;
        if (!m.fits(b - 1, next[b - 1].first, next[b - 1].second) || !m.fits(b, next[b].first, next[b].second)) continue;
        std::vector<int64_t> load = loads(next);
        if (load < best) {
          best = std::move(load);
          ranges = std::move(next);
          moved = true;
          ++moves;
        }
      }
    }
    if (!moved) break;
  }
  return ranges;
}

MinMaxResult min_memory_partition(const StageModel& m) {
  auto cost = [&](int s, int i, int j) { return m.memory_bytes(s, i, j); };
  auto bound = [&](int s, int i, int j) { return m.memory_bound_bytes(s, i, j); };
  return min_max_partition(m.layers(), m.stages(), cost, bound);
}

}  // namespace pipescope
