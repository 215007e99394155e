// Invariant: candidate i's result depends only on the request and i (workers write
// disjoint slots; ranking and the Pareto front are computed afterwards in index
// order), so any thread count gives the same bytes out.
#include "planner/search.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/report.h"
#include "planner/model_graph.h"
#include "planner/plan_builder.h"
#include "planner/stage_model.h"
#include "sim/simulator.h"

namespace pipescope {

RecomputeMode parse_recompute_mode(const std::string& text) {
  if (text == "auto") return RecomputeMode::Auto;
  if (text == "on") return RecomputeMode::On;
  if (text == "off") return RecomputeMode::Off;
  throw InputError("--recompute: expected auto, on or off, got \"" + text + "\"");
}

Objective parse_objective(const std::string& text) {
  if (text == "step") return Objective::Step;
  if (text == "mean") return Objective::Mean;
  if (text == "p50") return Objective::P50;
  if (text == "p99") return Objective::P99;
  throw InputError("--objective: expected step, mean, p50 or p99, got \"" + text + "\"");
}

std::string to_string(Objective objective) {
  switch (objective) {
    case Objective::Step: return "step";
    case Objective::Mean: return "mean";
    case Objective::P50: return "p50";
    case Objective::P99: return "p99";
  }
  return "step";
}

std::string Candidate::label() const {
  std::ostringstream out;
  out << to_string(schedule);
  if (chunks > 1) out << " v=" << chunks;
  out << " K=" << stages << " r=" << replicas << " M=" << microbatches;
  if (recompute) out << " recompute";
  return out.str();
}

namespace {

void check_request(const SearchRequest& q) {
  if (q.devices < 1) throw InputError("--devices: expected at least 1, got " + std::to_string(q.devices));
  if (q.batch < 1) throw InputError("--batch: expected at least 1 sample, got " + std::to_string(q.batch));
  if (q.devices > q.hardware.devices) {
    throw InputError(q.hardware.source, "devices", "--devices " + std::to_string(q.devices) + " asks for more than the " +
                                                       std::to_string(q.hardware.devices) + " devices of " + q.hardware.name);
  }
  if (q.schedules.empty()) throw InputError("--schedules: expected at least one schedule");
  if (q.max_stages < 0) throw InputError("--max-stages: expected at least 1, got " + std::to_string(q.max_stages));
  if (q.profile.num_layers() < 1) throw InputError(q.profile.source, "layers", "expected at least one layer");
  check_partition_name(q.partition);
  if (q.objective != Objective::Step && q.jitter.samples < 1) {
    throw InputError("--objective " + to_string(q.objective) + ": expected --samples N >= 1");
  }
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

}  // namespace

std::vector<Candidate> enumerate_candidates(const SearchRequest& q) {
  check_request(q);
  const int L = q.profile.num_layers();
  const int D = q.devices;
  const int max_k = std::min({D, L, q.max_stages > 0 ? q.max_stages : D});
  std::vector<bool> recompute_options;
  if (q.recompute != RecomputeMode::On) recompute_options.push_back(false);
  if (q.recompute != RecomputeMode::Off) recompute_options.push_back(true);
  std::vector<Candidate> out;
  for (int K = 1; K <= max_k; ++K) {
    if (D % K) continue;
    const int r = D / K;
    for (int64_t M : divisors(q.batch)) {
      if ((q.batch / M) % r != 0) continue;  // each replica takes a whole share of samples
      if (M > (int64_t{1} << 20)) continue;
      for (ScheduleKind kind : q.schedules) {
        std::vector<int> chunk_options = {1};
        if (kind == ScheduleKind::Interleaved) {
          chunk_options.clear();
          for (int v : q.interleaved_chunks) {
            if (K >= 2 && v >= 2 && M % K == 0 && K * v <= L) chunk_options.push_back(v);
          }
        }
        for (int v : chunk_options) {
          if (static_cast<int64_t>(K) * v * M * 4 > kMaxScheduleOps) continue;
          for (bool rc : recompute_options) {
            Candidate c;
            c.index = static_cast<int>(out.size());
            c.stages = K;
            c.replicas = r;
            c.microbatches = static_cast<int>(M);
            c.schedule = kind;
            c.chunks = v;
            c.recompute = rc;
            out.push_back(std::move(c));
          }
        }
      }
    }
  }
  if (out.empty()) {
    std::ostringstream why;
    why << "no candidate plan: with " << D << " devices, " << L << " layers and a batch of " << q.batch
        << " samples there is no K <= " << max_k << " dividing " << D
        << " whose replication r = D / K divides N / M for a divisor M of N";
    if (q.schedules.size() == 1 && q.schedules[0] == ScheduleKind::Interleaved) {
      why << " (interleaved also needs K >= 2, M a multiple of K and K v <= L)";
    }
    throw InputError(why.str());
  }
  return out;
}

namespace {

// The candidate's step under jitter, on this worker's thread (candidates are the parallel
// unit); the statistic the objective names becomes what the ranking compares.
void sample(const SearchRequest& q, const Profile& profile, const Schedule& schedule, Candidate& c) {
  const CostModel costs = build_cost_model(profile, c.plan, q.hardware);
  JitterSpec spec = q.jitter;
  spec.threads = 1;
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

void evaluate(const SearchRequest& q, const Profile& profile, Candidate& c) {
  Plan& plan = c.plan;
  plan.profile = q.profile_path;
  plan.batch_size = q.batch;
  plan.microbatches = c.microbatches;
  plan.schedule = c.schedule;
  plan.chunks = c.chunks;
  plan.recompute = c.recompute;
  plan.optimizer_state_factor = q.optimizer_state_factor;
  const int S = c.stages * c.chunks;
  plan.stages.assign(static_cast<std::size_t>(S), PlanStage{});
  const Schedule schedule = schedule_for(plan);
  LayerRanges ranges;
  StageModelSpec spec;
  spec.microbatch_size = plan.microbatch_size();
  spec.replicas = c.replicas;
  spec.optimizer_state_factor = q.optimizer_state_factor;
  const StageModel model(profile, q.hardware, schedule, spec);
  const std::string kind = check_partition_name(q.partition);
  if (kind == "optimal") {
    ranges = optimal_partition(model).ranges;
    if (ranges.empty()) ranges = min_memory_partition(model).ranges;  // the least it needs
    if (ranges.empty()) {
      spec.constrain_memory = false;
      ranges = optimal_partition(StageModel(profile, q.hardware, schedule, spec)).ranges;
    }
  } else {
    ranges = partition_for(profile, plan, c.replicas, kind, q.hardware);
  }
  auto assign = [&](const LayerRanges& cut) { place_stages(plan, schedule, cut, c.replicas); };
  auto run = [&](const LayerRanges& cut) {
    assign(cut);
    SimOptions options;
    options.record_timeline = false;
    return simulate(schedule, build_cost_model(profile, plan, q.hardware), q.hardware, options);
  };
  StepReport report = run(ranges);
  // Under interleaving the optimal cut ignores memory (a device sums non-adjacent chunks);
  // when it does not fit, the cut with the least per-chunk memory gets a second chance.
  if (kind == "optimal" && !report.fits() && !model.memory_exact()) {
    const LayerRanges lean = min_memory_partition(model).ranges;
    StepReport second = run(lean);
    if (second.fits() || second.peak_memory_bytes() < report.peak_memory_bytes()) {
      ranges = lean;
      report = std::move(second);
    } else {
      assign(ranges);  // the plan keeps the first cut
    }
  }
  c.slowest_stage_ns = model.bottleneck_ns(ranges);
  c.step_ns = report.step_ns;
  c.throughput_samples_per_s = report.throughput_samples_per_s;
  c.bubble_fraction = report.bubble_fraction;
  c.stage_peak_bytes.clear();
  for (const StageReport& st : report.stages) c.stage_peak_bytes.push_back(st.peak_memory_bytes);
  c.peak_bytes = report.peak_memory_bytes();
  c.fits = report.fits();
  c.objective_ns = c.step_ns;
  if (q.objective != Objective::Step && c.fits) sample(q, profile, schedule, c);
}

void rank_and_mark(SearchResult& r) {
  std::vector<int>& order = r.ranking;
  for (const Candidate& c : r.candidates) {
    if (c.fits) order.push_back(c.index);
  }
  auto& cs = r.candidates;
  if (!order.empty()) {
    r.deterministic_winner = *std::min_element(order.begin(), order.end(), [&](int a, int b) {
      return std::tie(cs[a].step_ns, cs[a].peak_bytes, a) < std::tie(cs[b].step_ns, cs[b].peak_bytes, b);
    });
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (cs[a].objective_ns != cs[b].objective_ns) return cs[a].objective_ns < cs[b].objective_ns;
    if (cs[a].peak_bytes != cs[b].peak_bytes) return cs[a].peak_bytes < cs[b].peak_bytes;
    return a < b;
  });
  for (std::size_t k = 0; k < order.size(); ++k) cs[order[k]].rank = static_cast<int>(k) + 1;
  // Pareto front: no other fitting plan is at least as fast with at most as much memory.
  std::vector<int> by_memory = order;
  std::sort(by_memory.begin(), by_memory.end(), [&](int a, int b) {
    if (cs[a].peak_bytes != cs[b].peak_bytes) return cs[a].peak_bytes < cs[b].peak_bytes;
    if (cs[a].objective_ns != cs[b].objective_ns) return cs[a].objective_ns < cs[b].objective_ns;
    return a < b;
  });
  int64_t fastest = kInfeasible;
  for (int i : by_memory) {
    if (cs[i].objective_ns < fastest) {
      cs[i].pareto = true;
      fastest = cs[i].objective_ns;
    }
  }
}

}  // namespace

SearchResult search_plans(const SearchRequest& request, const ProgressFn& progress) {
  SearchResult result;
  result.candidates = enumerate_candidates(request);
  result.memory_limit_bytes = request.hardware.memory_bytes;
  result.objective = request.objective;
  result.samples = request.objective == Objective::Step ? 0 : request.jitter.samples;
  const Profile profile = in_topological_order(request.profile);
  const std::size_t n = result.candidates.size();
  int threads = request.threads > 0 ? request.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(n)));
  result.threads = threads;

  std::atomic<std::size_t> next{0}, done{0};
  std::vector<std::exception_ptr> errors(n);
  std::mutex mutex;
  std::condition_variable finished;
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        evaluate(request, profile, result.candidates[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      if (done.fetch_add(1) + 1 == n) {
        std::lock_guard<std::mutex> lock(mutex);
        finished.notify_all();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  if (progress) {
    // The calling thread reports; the workers do the evaluating.
    pool.emplace_back(work);
    std::unique_lock<std::mutex> lock(mutex);
    while (done.load() < n) {
      progress(done.load(), n);
      finished.wait_for(lock, std::chrono::milliseconds(100));
    }
    progress(n, n);
  } else {
    work();
  }
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);  // the first failing candidate, in index order
  }
  rank_and_mark(result);
  return result;
}

const Candidate& winner(const SearchResult& r) {
  if (!r.ranking.empty()) return r.candidates[r.ranking.front()];
  const Candidate* least = nullptr;
  for (const Candidate& c : r.candidates) {
    if (!least || c.peak_bytes < least->peak_bytes) least = &c;
  }
  throw InputError("no candidate fits in " + format_bytes(static_cast<double>(r.memory_limit_bytes)) +
                   " per device (" + std::to_string(r.memory_limit_bytes) + " bytes): the smallest peak memory any of the " +
                   std::to_string(r.candidates.size()) + " candidates needs is " +
                   format_bytes(static_cast<double>(least->peak_bytes)) + " (" + std::to_string(least->peak_bytes) +
                   " bytes, " + least->label() + ")");
}

}  // namespace pipescope
