// Invariant: candidate i's result depends only on the request and i (workers write
// disjoint slots; ranking and the Pareto front are computed afterwards in index
// order), so any thread count gives the same bytes out.
#include "planner/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/report.h"
#include "planner/candidate_evaluation.h"
#include "planner/dag_partition.h"
#include "planner/model_graph.h"
#include "planner/plan_builder.h"
#include "planner/stage_model.h"
#include "planner/stage_replication.h"
#include "planner/zero_bubble_search.h"
#include "sim/simulator.h"

namespace pipescope {

std::vector<Recompute> parse_recompute_choices(const std::string& text) {
  if (text == "auto") return {Recompute::None, Recompute::Full};
  if (text == "on") return {Recompute::Full};  // the names before core/recompute.h, kept for scripts
  if (text == "off") return {Recompute::None};
  const std::optional<Recompute> one = recompute_from_name(text);
  if (!one) throw InputError("--recompute: expected auto, none, full (or on, off), got \"" + text + "\"");
  has_r_ops(*one, "--recompute");  // refuses selective by name
  return {*one};
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
  if (max_inflight > 0) out << " N=" << max_inflight;
  if (schedule == ScheduleKind::ZeroBubbleAuto && max_inflight == 0) out << " budget=memory";
  out << " K=" << stages << " r=";
  if (stage_replicas.empty()) out << replicas;
  for (std::size_t p = 0; p < stage_replicas.size(); ++p) out << (p ? "," : "") << stage_replicas[p];
  out << " M=" << microbatches;
  if (recompute == Recompute::Full) out << " recompute";
  if (offload_chosen) out << " offload=" << to_string(plan.offload.policy);
  if (!placement.empty()) out << " " << placement;
  return out.str();
}

namespace {

void check_request(const SearchRequest& q) {
  if (q.devices < 1) throw InputError("--devices: expected at least 1, got " + std::to_string(q.devices));
  if (q.batch < 1) throw InputError("--batch: expected at least 1 sample, got " + std::to_string(q.batch));
  // core/limits.h: the divisors of N, K r and the search's loops stay bounded.
  check_range("--devices", q.devices, 1, kMaxGpus);
  check_range("--batch", q.batch, 1, kMaxBatch);
  check_range("--max-stages", q.max_stages, 0, kMaxGpus);
  check_range("--threads", q.threads, 0, kMaxThreads);
  if (q.devices > q.hardware.devices) {
    throw InputError(q.hardware.source, "devices", "--devices " + std::to_string(q.devices) + " asks for more than the " +
                                                       std::to_string(q.hardware.devices) + " devices of " + q.hardware.name);
  }
  if (q.schedules.empty()) throw InputError("--schedules: expected at least one schedule");
  if (q.recomputes.empty()) throw InputError("--recompute: expected at least one of none, full");
  for (Recompute rc : q.recomputes) has_r_ops(rc, "--recompute");  // refuses selective by name
  if (q.max_stages < 0) throw InputError("--max-stages: expected at least 1, got " + std::to_string(q.max_stages));
  if (q.stages != 0) {
    const std::string pin = "--pipeline-model-parallel-size " + std::to_string(q.stages);
    if (q.stages < 0) throw InputError(pin + ": expected at least 1 (or 0: search K)");
    check_range("--pipeline-model-parallel-size", q.stages, 0, kMaxGpus);
    if (q.devices % q.stages != 0) {
      throw InputError(pin + ": K does not divide the " + std::to_string(q.devices) + " devices (K x r = D)");
    }
    if (q.max_stages > 0 && q.stages > q.max_stages) {
      throw InputError(pin + " and --max-stages " + std::to_string(q.max_stages) + ": K is above the largest K searched");
    }
    if (q.stages > q.profile.num_layers()) {
      throw InputError(pin + ": K is more than the " + std::to_string(q.profile.num_layers()) + " layers of " +
                       q.profile.source);
    }
  }
  if (q.profile.num_layers() < 1) throw InputError(q.profile.source, "layers", "expected at least one layer");
  if (q.objective != Objective::Step && q.jitter.samples < 1) {
    throw InputError("--objective " + to_string(q.objective) + ": expected --samples N >= 1");
  }
  if (q.objective != Objective::Step) check_range("--samples", q.jitter.samples, 1, kMaxJitterSamples);
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
  std::vector<Candidate> out;
  for (int K = 1; K <= max_k; ++K) {
    if (D % K || (q.stages > 0 && K != q.stages)) continue;
    const int r = D / K;
    for (int64_t M : divisors(q.batch)) {
      if ((q.batch / M) % r != 0) continue;  // each replica takes a whole share of samples
      if (M > kMaxSearchMicrobatches) continue;
      for (ScheduleKind kind : q.schedules) {
        // Asynchronous: one replica per stage (round-robin replication is not built).
        if (is_asynchronous(kind) && r > 1) continue;
        // The M the kind's generator takes (core/schedule_kinds.h: 2bw M >= K, dualpipev
        // M >= 2K, interleaved a multiple of K, interleaved-zb of max(1, M / K)).
        if (!microbatch_refusal(kind, K, static_cast<int>(M)).empty()) continue;
        std::vector<int> chunk_options = {1};
        if (required_chunks(kind) == 2) {  // V-shapes: 2 chunks
          chunk_options.clear();
          if (2 * K <= L) chunk_options.push_back(2);
        }
        if (required_chunks(kind) == 0) {  // interleaved, looped-bfs, interleaved-zb: the --chunks list
          chunk_options.clear();
          for (int v : q.interleaved_chunks) {
            if (K >= 2 && v >= 2 && K * v <= L) chunk_options.push_back(v);
          }
        }
        for (int v : chunk_options) {
          if (static_cast<int64_t>(K) * v * M * 4 > kMaxScheduleOps) continue;
          for (Recompute rc : q.recomputes) {
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

// A lower bound on the step of candidate c under any cut and any replica counts per
// position (Depth::BoundOnly's cuts cost a partition per cap; this costs L x D
// interpolations): r replicas of a position each run b/r samples, so each layer costs
// the devices at least min over r of r t(b/r) per micro-batch (t = F + I + W, + F when
// re-materialising); the busiest of D devices holds at least the average, at the
// fastest speed. 1 ns per layer and op kind per micro-batch below, for rounding.
int64_t any_cut_step_bound_ns(const SearchRequest& q, const Profile& profile, const Candidate& c) {
  const double b = static_cast<double>(q.batch) / c.microbatches;
  double fastest = 0;
  for (int d = 0; d < q.devices; ++d) fastest = std::max(fastest, q.hardware.device_speed(d));
  double total = 0;
  for (int l = 0; l < profile.num_layers(); ++l) {
    double least = std::numeric_limits<double>::max();
    for (int r = 1; r <= q.devices; ++r) {
      const double x = b / r, f = profile.forward_ms(l, x);
      least = std::min(least, r * (f * (has_r_ops(c.recompute) ? 2 : 1) + profile.backward_input_ms(l, x) + profile.backward_weight_ms(l, x)));
    }
    total += least;  // may be negative where the profile extrapolates below its sizes, as in the cost model
  }
  const int64_t slack = int64_t{4} * profile.num_layers() * c.microbatches;
  return std::max<int64_t>(0, ms_to_ns(total * c.microbatches / (q.devices * fastest)) - slack);
}

// zb-auto's limits, tried in turn until one fits. On hardware with a memory size first
// the byte budget the memory leaves (max_inflight 0: zero_bubble_limits' default, the
// paper's ZB-1p / ZB-2p way of bounding a searched order), then, as without a memory
// size, the largest count that fits: 2K (enough for zero bubble), 2K-1 (ZB-H2's), K
// (1F1B's), K/2, 1; each no more than M. With `prune_above` a candidate whose step bound
// (the any-cut one, then the least over its limits' cuts) is above it is marked pruned
// instead, its bound in step_ns.
void evaluate(const SearchRequest& q, const Profile& listed, const GraphLattices* lattices, Candidate& c,
              int64_t prune_above = std::numeric_limits<int64_t>::max()) {
  if (c.schedule != ScheduleKind::ZeroBubbleAuto) return evaluate_candidate(q, listed, lattices, c);
  std::vector<int> caps;
  if (q.hardware.memory_bytes > 0) caps.push_back(0);
  for (int cap : {2 * c.stages, 2 * c.stages - 1, c.stages, (c.stages + 1) / 2, 1}) {
    cap = std::min(cap, c.microbatches);
    if (caps.empty() || caps.back() == 0 || cap < caps.back()) caps.push_back(cap);
  }
  Candidate fresh = c;  // each cap starts from the enumerated candidate
  fresh.pruned = false;
  auto prune = [&](int64_t bound) {
    c = fresh;
    c.max_inflight = caps.front();
    c.step_ns = c.objective_ns = bound;
    c.pruned = true;
  };
  if (prune_above < std::numeric_limits<int64_t>::max()) {
    const int64_t any_cut = any_cut_step_bound_ns(q, listed, c);
    if (any_cut > prune_above) return prune(any_cut);
    int64_t least = std::numeric_limits<int64_t>::max();
    for (int cap : caps) {
      c = fresh;
      c.max_inflight = cap;
      evaluate_candidate(q, listed, lattices, c, Depth::BoundOnly);
      least = std::min(least, c.step_ns);
    }
    if (least > prune_above) return prune(least);
  }
  for (int cap : caps) {
    c = fresh;
    c.max_inflight = cap;
    evaluate_candidate(q, listed, lattices, c);
    if (c.fits) return;
  }
}

// Progress across both phases of search_plans: `done` of `total` evaluations.
struct Progress {
  const ProgressFn& report;
  std::atomic<std::size_t>* done;
  std::size_t total;
};

// Evaluates candidates[i] for each i in `which` (zb-auto ones pruned above
// `prune_above`) on `threads` threads; with a progress callback the calling thread
// reports instead of evaluating. Rethrows the first failure in `which` order.
void evaluate_each(const SearchRequest& q, const Profile& profile, const GraphLattices* lattices,
                   std::vector<Candidate>& candidates, const std::vector<std::size_t>& which, int64_t prune_above,
                   int threads, const Progress& progress) {
  std::atomic<std::size_t> next{0}, finished_here{0};
  std::vector<std::exception_ptr> errors(which.size());
  std::mutex mutex;
  std::condition_variable finished;
  auto work = [&] {
    for (std::size_t k; (k = next.fetch_add(1)) < which.size();) {
      Candidate& c = candidates[which[k]];
      try {
        evaluate(q, profile, lattices, c, prune_above);
      } catch (...) {
        errors[k] = std::current_exception();
      }
      progress.done->fetch_add(1);
      if (finished_here.fetch_add(1) + 1 == which.size()) {
        std::lock_guard<std::mutex> lock(mutex);
        finished.notify_all();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  if (progress.report) {
    pool.emplace_back(work);
    std::unique_lock<std::mutex> lock(mutex);
    while (finished_here.load() < which.size()) {
      progress.report(progress.done->load(), progress.total);
      finished.wait_for(lock, std::chrono::milliseconds(100));
    }
  } else {
    work();
  }
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
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
  result.exact_top = request.exact_top;
  result.samples = request.objective == Objective::Step ? 0 : request.jitter.samples;
  const Profile profile = in_topological_order(request.profile);
  // The downset lattices of a graph profile, shared by every candidate's partition. The
  // full lattice only up to kSearchMaxIdeals: every candidate sweeps it (Inception-v3's
  // 221,565 downsets cost ~0.3 s a candidate), so larger graphs use the windows alone.
  std::unique_ptr<GraphLattices> lattices;
  if (!profile.is_chain() && request.partition == PartitionKind::Optimal) {
    lattices = std::make_unique<GraphLattices>(
        build_graph_lattices(profile.num_layers(), profile.graph_edges(), kSearchMaxIdeals));
  }
  const std::size_t n = result.candidates.size();
  int threads = request.threads > 0 ? request.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(n)));
  result.threads = threads;

  // Pruning zb-auto: phase 1 evaluates every other candidate; phase 2 the zb-auto ones,
  // each pruned when a lower bound of its step is above the exact_top-th fitting step
  // of phase 1 (so the first exact_top of the ranking stay exact), else searched.
  const bool prune = request.exact_top > 0 && request.objective == Objective::Step;
  std::vector<std::size_t> first, later;
  for (std::size_t i = 0; i < n; ++i) {
    (prune && result.candidates[i].schedule == ScheduleKind::ZeroBubbleAuto ? later : first).push_back(i);
  }
  std::atomic<std::size_t> done{0};
  const Progress counted{progress, &done, n};
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  evaluate_each(request, profile, lattices.get(), result.candidates, first, kNever, threads, counted);
  if (!later.empty()) {
    std::vector<int64_t> fitting;
    for (const Candidate& c : result.candidates) {
      if (c.fits) fitting.push_back(c.objective_ns);
    }
    int64_t threshold = kNever;  // fewer than exact_top fit: nothing is pruned
    const std::size_t k = static_cast<std::size_t>(request.exact_top);
    if (fitting.size() >= k) {
      std::nth_element(fitting.begin(), fitting.begin() + static_cast<std::ptrdiff_t>(k - 1), fitting.end());
      threshold = fitting[k - 1];
    }
    evaluate_each(request, profile, lattices.get(), result.candidates, later, threshold, threads, counted);
  }
  if (progress) progress(n, n);
  rank_and_mark(result);
  return result;
}

Profile reordered_profile(const SearchRequest& request, const Candidate& c) {
  const Profile listed = in_topological_order(request.profile);
  return c.layer_order.empty() ? listed : reorder_layers(listed, c.layer_order);
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
