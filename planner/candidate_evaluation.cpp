// The steps of candidate_evaluation.h. Invariant: candidate c's result depends only on
// the request, the listed profile and c's enumerated fields (no step reads another
// candidate), so the search may run candidates on any threads.
#include "planner/candidate_evaluation.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/cost_model.h"
#include "planner/model_graph.h"
#include "planner/partition.h"
#include "planner/plan_builder.h"
#include "planner/stage_replication.h"
#include "planner/zero_bubble_search.h"
#include "sim/distribution.h"
#include "sim/simulator.h"

namespace pipescope {

namespace {

// Heterogeneous devices: the device orders a candidate may be placed in besides the
// listed one, fastest first and slowest first (stable sorts, so a replica group gets
// devices of like speed); none when every device has the same speed.
std::vector<std::pair<std::string, std::vector<int>>> speed_placements(const SearchRequest& q) {
  std::vector<int> order(static_cast<std::size_t>(q.devices));
  for (int d = 0; d < q.devices; ++d) order[d] = d;
  auto speed = [&](int d) { return q.hardware.device_speed(d); };
  bool uniform = true;
  for (int d = 1; d < q.devices; ++d) uniform = uniform && speed(d) == speed(0);
  if (!q.place_by_speed || uniform) return {};
  std::vector<int> fastest = order, slowest = order;
  std::stable_sort(fastest.begin(), fastest.end(), [&](int a, int b) { return speed(a) > speed(b); });
  std::stable_sort(slowest.begin(), slowest.end(), [&](int a, int b) { return speed(a) < speed(b); });
  std::vector<std::pair<std::string, std::vector<int>>> out;
  if (fastest != order) out.emplace_back("fastest-first", fastest);
  if (slowest != order) out.emplace_back("slowest-first", slowest);
  return out;
}

// The hardware as the partitioners see a placement: device k has the speed of
// order[k] (links keep the hardware's node structure; the simulation uses real ids).
Hardware placed_view(const Hardware& h, const std::vector<int>& order) {
  Hardware placed = h;
  if (order.empty()) return placed;
  placed.speed.assign(static_cast<std::size_t>(h.devices), 1.0);
  for (int d = 0; d < h.devices; ++d) placed.speed[d] = h.device_speed(d);
  for (std::size_t k = 0; k < order.size(); ++k) placed.speed[k] = h.device_speed(order[k]);
  return placed;
}

// Memory-aware cut under interleaving: a device's peak is at most the sum of its chunks'
// own peaks, so capping every stage's own peak at limit / v should make the cut fit; a
// larger share f of the limit per stage (bisected in [1/v, 1], 6 simulations at most)
// buys speed while the simulation still says it fits. True with the fastest fitting
// cut and its report; false when even the share 1/v gives no fitting cut.
template <class Run>
bool interleaved_fit(const StageModel& m, int chunks, const Run& run, LayerRanges& out, StepReport& report) {
  if (m.memory_limit() <= 0) return false;
  double lo = 1.0 / chunks, hi = 1.0;
  bool have = false;
  for (int round = 0; round < 6; ++round) {
    const double f = round == 0 ? lo : (lo + hi) / 2;
    const int64_t cap = static_cast<int64_t>(static_cast<double>(m.memory_limit()) * f);
    auto cost = [&](int s, int i, int j) { return m.memory_bytes(s, i, j) > cap ? kInfeasible : m.time_ns(s, i, j); };
    auto bound = [&](int s, int i, int j) {
      return m.memory_bound_bytes(s, i, j) > cap ? kInfeasible : m.time_bound_ns(s, i, j);
    };
    const MinMaxResult cut = min_max_partition(m.layers(), m.stages(), cost, bound);
    StepReport r;
    const bool fits = !cut.ranges.empty() && (r = run(cut.ranges), r.fits());
    if (!fits && round == 0) break;  // not even the safe share has a fitting cut
    if (!fits) {
      hi = f;
      continue;
    }
    if (!have || r.step_ns < report.step_ns) {
      report = std::move(r);
      out = cut.ranges;
      have = true;
    }
    lo = f;
  }
  return have;
}

// The candidate's step under jitter, on this worker's thread (candidates are the parallel
// unit); the statistic the objective names becomes what the ranking compares.
void sample(const SearchRequest& q, const Profile& profile, const Schedule& schedule, Candidate& c) {
  const CostModel costs = build_cost_model(profile, c.plan, q.hardware);
  JitterSpec spec = q.jitter;
  spec.threads = 1;
  spec.runtime = q.runtime ? &*q.runtime : nullptr;
  if (q.jitter_from_profile) spec.stage_cv = stage_cv_from_profile(profile, costs);
  const StepDistribution d = sample_steps(schedule, costs, q.hardware, spec);
  c.sampled = true;
  c.mean_ns = d.mean_ns;
  c.p50_ns = d.p50_ns;
  c.p99_ns = d.p99_ns;
  switch (q.objective) {
    case Objective::Step: break;
    case Objective::Mean: c.objective_ns = std::llround(d.mean_ns); break;
    case Objective::P50: c.objective_ns = d.p50_ns; break;
    case Objective::P99: c.objective_ns = d.p99_ns; break;
  }
}

}  // namespace

// A candidate's simulation: no timeline; under post-validation several steps (the
// ranking takes their steady state).
static SimOptions search_sim_options(const Plan& plan, const Hardware& hardware,
                                     const std::optional<RuntimeCosts>& runtime) {
  SimOptions options;
  options.runtime = runtime ? &*runtime : nullptr;
  options.record_timeline = false;
  options.p2p = p2p_of(plan, hardware);
  options.offload = plan.offload;
  options.optimizer_step = plan.optimizer_step;
  if (plan.optimizer_step == OptimizerStep::PostValidation) options.steps = kAsyncEvaluationSteps;
  return options;
}

CandidateEvaluation::CandidateEvaluation(const SearchRequest& request, const Profile& listed_profile, Candidate& candidate)
    : q(request), listed(listed_profile), c(candidate), kind(request.partition) {
  Plan& plan = c.plan;
  plan.profile = q.profile_path;
  plan.batch_size = q.batch;
  set_schedule_fields(plan, c);
  plan.optimizer_state_factor = q.optimizer_state_factor;
  if (!is_asynchronous(c.schedule)) plan.optimizer_step = q.optimizer_step;
  plan.p2p = q.p2p;
  plan.offload = q.offload;
  plan.stages.assign(static_cast<std::size_t>(c.stages * c.chunks), PlanStage{});
  schedule = schedule_for(plan, kAsyncEvaluationSteps);  // asynchronous kinds: several steps, no flush
  spec.microbatch_size = plan.microbatch_size();
  spec.replicas = c.replicas;
  spec.optimizer_state_factor = q.optimizer_state_factor;
  spec.runtime = q.runtime ? &*q.runtime : nullptr;  // what I frees as the runtime frees it
  placed = q.hardware;
  replicas.assign(static_cast<std::size_t>(c.stages), c.replicas);
}

// Position p holds slots [first_slot(p), first_slot(p) + r_p) of the placement.
void CandidateEvaluation::assign(const LayerRanges& cut) {
  for (int s = 0; s < static_cast<int>(c.plan.stages.size()); ++s) {
    const int p = schedule.stage_position[s];  // the schedule's stage -> position map
    int first_slot = 0;
    for (int k = 0; k < p; ++k) first_slot += replicas[k];
    std::vector<int> devices;
    for (int k = 0; k < replicas[p]; ++k) {
      const int slot = first_slot + k;
      devices.push_back(c.device_order.empty() ? slot : c.device_order[slot]);
    }
    c.plan.stages[s] = {cut[s].first, cut[s].second, std::move(devices)};
  }
}

LayerRanges CandidateEvaluation::runnable(LayerRanges cut) const {
  keep_loss_with_producer(profile(), cut);
  return cut;
}

StepReport CandidateEvaluation::run(const LayerRanges& cut) {
  assign(cut);
  return simulate(schedule, build_cost_model(profile(), c.plan, q.hardware), q.hardware, search_sim_options(c.plan, q.hardware, q.runtime));
}

void place_by_speed(CandidateEvaluation& e) {
  const auto placements = speed_placements(e.q);
  if (e.c.stages < 2 || !e.optimal() || placements.empty()) return;
  int64_t fastest = optimal_partition(StageModel(e.listed, e.q.hardware, e.schedule, e.spec)).value;
  for (const auto& [name, order] : placements) {
    const int64_t t = optimal_partition(StageModel(e.listed, placed_view(e.q.hardware, order), e.schedule, e.spec)).value;
    if (t < fastest) {
      fastest = t;
      e.c.placement = name;
      e.c.device_order = order;
    }
  }
  e.placed = placed_view(e.q.hardware, e.c.device_order);
}

void order_layers(CandidateEvaluation& e, const GraphLattices* lattices) {
  if (!e.optimal() || !lattices) return;
  e.c.layer_order = graph_layer_order(e.listed, e.placed, e.schedule, e.spec, lattices);
  if (!e.c.layer_order.empty()) e.reordered = reorder_layers(e.listed, e.c.layer_order);
}

void first_cut(CandidateEvaluation& e) {
  e.model.emplace(e.profile(), e.placed, e.schedule, e.spec);
  e.ranges = e.runnable(e.optimal() ? optimal_cut(*e.model)
                                     : cut_in_order(e.profile(), e.placed, e.schedule, e.spec, e.kind));
}

int64_t zero_bubble_bound_ns(CandidateEvaluation& e) {
  auto bound = [&](const LayerRanges& cut) {
    e.assign(cut);
    return zero_bubble_step_bound_ns(e.schedule, build_cost_model(e.profile(), e.c.plan, e.q.hardware), e.q.hardware);
  };
  int64_t least = bound(e.ranges);
  if (e.optimal() && e.q.per_stage_replication && e.c.stages >= 2 && e.c.replicas >= 2) {
    const StageReplication varied = replicate_per_stage(e.profile(), e.placed, e.schedule, e.spec, e.q.devices,
                                                        e.q.batch / e.c.microbatches, e.ranges);
    e.replicas = varied.replicas;
    least = std::min(least, bound(varied.ranges));
  }
  return least;
}

void balance_device_sums(CandidateEvaluation& e) {
  if (!e.optimal() || e.model->memory_exact()) return;
  const LayerRanges balanced = e.runnable(balance_devices(*e.model, e.ranges));
  if (balanced == e.ranges) return;
  StepReport second = e.run(balanced);
  if ((second.fits() || !e.report.fits()) && second.step_ns < e.report.step_ns) {
    e.ranges = balanced;
    e.report = std::move(second);
  }
  e.assign(e.ranges);  // the plan holds the cut kept
}

// Under interleaving the optimal cut ignores memory (a device sums non-adjacent chunks);
// when it does not fit, memory-aware cuts get their chance, then the cut with the least
// per-chunk memory.
void recut_for_memory(CandidateEvaluation& e) {
  if (e.optimal() && !e.report.fits() && !e.model->memory_exact()) {
    const LayerRanges lean = e.runnable(min_memory_partition(*e.model).ranges);
    StepReport second = e.run(lean);
    if (second.fits() || second.peak_memory_bytes() < e.report.peak_memory_bytes()) {
      e.ranges = lean;
      e.report = std::move(second);
    }
    LayerRanges aware;
    StepReport fitted;
    auto run = [&](const LayerRanges& cut) { return e.run(cut); };
    if (e.q.memory_aware_interleaving && interleaved_fit(*e.model, e.c.chunks, run, aware, fitted) &&
        e.runnable(aware) == aware && (!e.report.fits() || fitted.step_ns < e.report.step_ns)) {
      e.ranges = aware;
      e.report = std::move(fitted);
    }
    e.assign(e.ranges);  // the plan holds the cut kept
  }
  e.c.slowest_stage_ns = e.model->bottleneck_ns(e.ranges);
}

void replicate_positions(CandidateEvaluation& e) {
  Candidate& c = e.c;
  if (!e.optimal() || !e.q.per_stage_replication || c.chunks != 1 || c.stages < 2 || c.replicas < 2) return;
  const StageReplication varied = replicate_per_stage(e.profile(), e.placed, e.schedule, e.spec, e.q.devices,
                                                      e.q.batch / c.microbatches, e.ranges);
  if (varied.bottleneck_ns >= c.slowest_stage_ns) return;
  e.replicas = varied.replicas;
  const LayerRanges cut = e.runnable(varied.ranges);
  StepReport second = e.run(cut);
  if (second.fits() && (!e.report.fits() || second.step_ns < e.report.step_ns)) {
    e.ranges = cut;
    e.report = std::move(second);
    c.stage_replicas = varied.replicas;
    c.slowest_stage_ns = varied.bottleneck_ns;
  } else {
    e.replicas.assign(static_cast<std::size_t>(c.stages), c.replicas);
    e.assign(e.ranges);  // the plan keeps the uniform replication
  }
}

void order_zero_bubble(CandidateEvaluation& e) {
  if (e.c.schedule != ScheduleKind::ZeroBubbleAuto) return;
  // The same call as resolve(): simulate --plan reproduces it.
  const CostModel costs = build_cost_model(e.profile(), e.c.plan, e.q.hardware);
  e.schedule = schedule_for_costs(e.c.plan, costs, e.q.hardware, e.q.runtime ? &*e.q.runtime : nullptr);
  e.report = simulate(e.schedule, costs, e.q.hardware, search_sim_options(e.c.plan, e.q.hardware, e.q.runtime));
}

void consider_offload(CandidateEvaluation& e) {
  Candidate& c = e.c;
  if (!e.q.consider_offload || e.q.offload.active() || !e.q.hardware.host_link || e.report.fits() ||
      is_asynchronous(c.schedule)) {
    return;
  }
  auto trial = [](OffloadPolicy policy, const StepReport& r) {
    Candidate::OffloadTrial t{policy, r.ranked_step_ns(), {}, r.fits()};
    for (const PositionReport& st : r.positions) t.stage_peak_bytes.push_back(st.peak_memory_bytes);
    return t;
  };
  c.offload_trials = {trial(OffloadPolicy::None, e.report)};
  std::optional<StepReport> taken;
  Offload chosen = e.q.offload;
  for (OffloadPolicy policy : {OffloadPolicy::Selective, OffloadPolicy::All}) {
    c.plan.offload = Offload{policy, e.q.offload.fraction};
    StepReport r = simulate(e.schedule, build_cost_model(e.profile(), c.plan, e.q.hardware), e.q.hardware,
                            search_sim_options(c.plan, e.q.hardware, e.q.runtime));
    c.offload_trials.push_back(trial(policy, r));
    if (!taken && r.fits()) {
      taken = std::move(r);
      chosen = c.plan.offload;
    }
  }
  c.plan.offload = chosen;
  c.offload_chosen = taken.has_value();
  if (taken) e.report = std::move(*taken);
}

void record_report(CandidateEvaluation& e) {
  Candidate& c = e.c;
  const StepReport& report = e.report;
  // Asynchronous kinds are ranked by their steady-state step (a flushed step is its own).
  c.step_ns = report.ranked_step_ns();
  c.throughput_samples_per_s = report.steps > 1 ? report.steady_state_throughput_samples_per_s
                                                : report.throughput_samples_per_s;
  c.bubble_fraction = report.bubble_fraction;
  if (report.steps > 1 && report.steady_state_step_ns > 0) {  // the steady state's: busy time per step
    double busy = 0;
    for (const PositionReport& st : report.positions) busy += static_cast<double>(st.busy_ns) / report.steps;
    c.bubble_fraction = std::max(0.0, bubble_fraction(busy, static_cast<int>(report.positions.size()),
                                                      static_cast<double>(report.steady_state_step_ns)));
  }
  c.stage_peak_bytes.clear();
  c.stage_host_peak_bytes.clear();
  for (const PositionReport& st : report.positions) {
    c.stage_peak_bytes.push_back(st.peak_memory_bytes);
    c.stage_host_peak_bytes.push_back(st.host_peak_bytes);
  }
  c.peak_bytes = report.peak_memory_bytes();
  c.fits = report.fits();
  c.objective_ns = c.step_ns;
  if (e.q.objective != Objective::Step && c.fits) sample(e.q, e.profile(), e.schedule, c);
}

void evaluate_candidate(const SearchRequest& q, const Profile& listed, const GraphLattices* lattices, Candidate& c,
                        Depth depth) {
  CandidateEvaluation e(q, listed, c);
  place_by_speed(e);
  order_layers(e, lattices);
  first_cut(e);
  // zb-auto: the cut is chosen with its unit-time order; the order is searched once, on
  // the final cut's costs. BoundOnly stops here: the final cut is `ranges` or the
  // per-position replicated one (interleaving's re-cuts need 2 chunks).
  if (depth == Depth::BoundOnly) {
    c.step_ns = c.objective_ns = zero_bubble_bound_ns(e);
    c.fits = false;
    return;
  }
  e.report = e.run(e.ranges);
  balance_device_sums(e);
  recut_for_memory(e);
  replicate_positions(e);
  order_zero_bubble(e);
  consider_offload(e);
  record_report(e);
}

}  // namespace pipescope
