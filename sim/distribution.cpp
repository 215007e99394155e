// Samples a step N times with jittered op times (sim/distribution.h). Each sample owns
// a generator seeded by (seed, sample index) and draws in a fixed order (stragglers per
// device, then one factor per op, then one per transfer), so threads only decide who
// computes a sample, never what it draws.
#include "sim/distribution.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <thread>

#include "core/error.h"
#include "core/limits.h"
#include "core/op_rules.h"
#include "sim/simulator.h"

namespace pipescope {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): small, fast, and the same stream on every platform.
class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t sample) : state_(seed ^ (0x9e3779b97f4a7c15ULL * (sample + 1))) { next(); }
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }  // (0, 1]
  double normal() {  // Box-Muller, one of the pair
    return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
  }
  // Lognormal with mean 1 and coefficient of variation `cv`: sigma^2 = ln(1 + cv^2).
  double lognormal_factor(double cv) {
    if (cv == 0) return 1.0;
    const double s2 = std::log1p(cv * cv);
    return std::exp(-0.5 * s2 + std::sqrt(s2) * normal());
  }

 private:
  uint64_t state_;
};

void check_spec(const JitterSpec& j, int stages) {
  check_range("--samples", j.samples, 1, kMaxJitterSamples);
  if (!(j.cv >= 0)) throw InputError("--jitter: expected a coefficient of variation >= 0");
  if (!(j.link_cv >= 0)) throw InputError("--link-jitter: expected a coefficient of variation >= 0");
  if (!(j.straggler_probability >= 0 && j.straggler_probability <= 1)) {
    throw InputError("--straggler: expected a probability P in [0, 1] (P:SLOWDOWN)");
  }
  if (!(j.straggler_slowdown >= 1)) throw InputError("--straggler: expected a SLOWDOWN >= 1 (P:SLOWDOWN)");
  if (!j.stage_cv.empty() && static_cast<int>(j.stage_cv.size()) != stages) {
    throw InputError("jitter: " + std::to_string(j.stage_cv.size()) + " per-stage CVs for " +
                     std::to_string(stages) + " stages");
  }
  for (double cv : j.stage_cv) {
    if (!(cv >= 0)) throw InputError("jitter: a stage's coefficient of variation is negative");
  }
}

// What every sample shares: each op's device, base time and the op that sends its input.
struct OpGraph {
  std::vector<Op> ops;                // flat, device by device
  std::vector<int> device;            // per op
  std::vector<int64_t> base_ns;       // per op: op_duration_ns
  std::vector<int64_t> sender;        // per op: flat index of the op whose message it waits for, or -1
  std::vector<std::size_t> first_op;  // per device, plus the end
};

OpGraph build_graph(const Schedule& s, const CostModel& c) {
  OpGraph g;
  const int K = s.positions(), S = s.stages(), M = s.microbatches();
  g.first_op.push_back(0);
  for (int d = 0; d < K; ++d) {
    for (const Op& op : s.position_ops[d]) {
      g.ops.push_back(op);
      g.device.push_back(d);
      g.base_ns.push_back(op_duration_ns(op.kind, c.stages[op.stage]));
    }
    g.first_op.push_back(g.ops.size());
  }
  auto slot = [M](MessageKind kind, int stage, int mb) {
    return 2 * (static_cast<std::size_t>(stage) * M + mb) + static_cast<std::size_t>(kind);
  };
  std::vector<int64_t> sent_by(2 * static_cast<std::size_t>(S) * M, -1);
  for (std::size_t f = 0; f < g.ops.size(); ++f) {
    if (auto out = op_sends(g.ops[f], S)) sent_by[slot(out->kind, out->to_stage, g.ops[f].microbatch)] = f;
  }
  g.sender.assign(g.ops.size(), -1);
  for (std::size_t f = 0; f < g.ops.size(); ++f) {
    if (auto in = op_receives(g.ops[f], S)) g.sender[f] = sent_by[slot(in->kind, g.ops[f].stage, g.ops[f].microbatch)];
  }
  return g;
}

struct SampleResult {
  int64_t step_ns = 0;
  double bubble = 0;
  std::vector<double> share;  // per position
};

// Walks the critical path back from the op that ends last: an op that started later
// than its device's previous op ended waited for its input, so the path goes to the
// sender; otherwise to the device's previous op.
std::vector<double> critical_share(const OpGraph& g, const std::vector<int64_t>& start,
                                   const std::vector<int64_t>& dur, int devices) {
  std::vector<double> share(devices, 0.0);
  if (g.ops.empty()) return share;
  int64_t cur = -1, latest = -1;
  for (int d = 0; d < devices; ++d) {
    if (g.first_op[d + 1] == g.first_op[d]) continue;
    const std::size_t last = g.first_op[d + 1] - 1;
    if (start[last] + dur[last] > latest) latest = start[last] + dur[last], cur = static_cast<int64_t>(last);
  }
  double total = 0;
  while (cur >= 0) {
    const int d = g.device[cur];
    share[d] += static_cast<double>(dur[cur]);
    total += static_cast<double>(dur[cur]);
    const bool first_on_device = static_cast<std::size_t>(cur) == g.first_op[d];
    const int64_t device_free = first_on_device ? 0 : start[cur - 1] + dur[cur - 1];
    if (g.sender[cur] >= 0 && (first_on_device || start[cur] > device_free)) {
      cur = g.sender[cur];
    } else {
      cur = first_on_device ? -1 : cur - 1;
    }
  }
  if (total > 0) {
    for (double& x : share) x /= total;
  }
  return share;
}

SampleResult run_sample(const Schedule& s, const CostModel& c, const Hardware& h, const JitterSpec& j,
                        const OpGraph& g, int index, std::vector<int64_t>& dur, std::vector<double>& send,
                        std::vector<int64_t>& start) {
  SampleRng rng(j.seed, static_cast<uint64_t>(index));
  const int K = s.positions();
  std::vector<double> slow(K, 1.0);
  if (j.straggler_probability > 0) {
    for (int d = 0; d < K; ++d) {
      if (rng.uniform() <= j.straggler_probability) slow[d] = j.straggler_slowdown;
    }
  }
  for (std::size_t f = 0; f < g.ops.size(); ++f) {
    const double cv = j.stage_cv.empty() ? j.cv : j.stage_cv[g.ops[f].stage];
    const double factor = rng.lognormal_factor(cv) * slow[g.device[f]];
    dur[f] = factor == 1.0 ? g.base_ns[f] : std::llround(static_cast<double>(g.base_ns[f]) * factor);
  }
  if (j.link_cv > 0) {
    for (double& x : send) x = rng.lognormal_factor(j.link_cv);
  }
  SimOptions o;
  o.record_timeline = false;
  o.op_durations_ns = dur;
  if (j.link_cv > 0) o.send_factors = send;
  o.op_starts_ns = &start;
  o.p2p = j.p2p;
  o.runtime = j.runtime;
  StepReport r = simulate(s, c, h, o);
  return {r.ranked_step_ns(), r.bubble_fraction, critical_share(g, start, dur, K)};
}

double nearest_rank_double(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto n = static_cast<double>(v.size());
  return v[static_cast<std::size_t>(std::max(1.0, std::ceil(q * n))) - 1];
}

}  // namespace

// A stage op runs its layers back to back, and what disturbs one (another tenant, a
// frequency change) lasts across them: its CV is the time-weighted mean of its layers'
// forward and backward CVs (the correlated case; independent layers would average out).
std::vector<double> stage_cv_from_profile(const Profile& profile, const CostModel& costs) {
  if (!profile.has_spread()) {
    throw InputError(profile.source, "layers",
                     "--jitter profile: the profile carries no measured spread (forward_cv and backward_cv per layer; "
                     "`pipescope profile` writes them); give a coefficient of variation instead (--jitter 0.05)");
  }
  std::vector<double> out;
  for (const StageCost& st : costs.stages) {
    const double b = costs.microbatch_size / std::max(st.replicas, 1);
    double weighted = 0, total = 0;
    for (int l = st.first_layer; l < st.end_layer; ++l) {
      const LayerProfile& lp = profile.layers[l];
      const double tf = profile.forward_ms(l, b), tb = profile.backward_ms(l, b);
      weighted += std::max(0.0, profile.interpolate(lp.forward_cv, b)) * tf;
      weighted += std::max(0.0, profile.interpolate(lp.backward_cv, b)) * tb;
      total += tf + tb;
    }
    out.push_back(total > 0 ? weighted / total : 0.0);
  }
  return out;
}

int64_t nearest_rank(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto n = static_cast<double>(sorted.size());
  const auto rank = static_cast<std::size_t>(std::clamp(std::ceil(q * n), 1.0, n));
  return sorted[rank - 1];
}

StepDistribution sample_steps(const Schedule& s, const CostModel& c, const Hardware& h, const JitterSpec& j) {
  check_spec(j, s.stages());
  const OpGraph g = build_graph(s, c);
  StepDistribution out;
  out.samples = j.samples;
  SimOptions plain;
  plain.record_timeline = false;
  plain.p2p = j.p2p;
  plain.runtime = j.runtime;
  out.deterministic_ns = simulate(s, c, h, plain).ranked_step_ns();  // asynchronous: the steady state

  std::vector<SampleResult> results(j.samples);
  std::atomic<int> next{0};
  auto worker = [&] {
    std::vector<int64_t> dur(g.ops.size()), start;
    std::vector<double> send(g.ops.size(), 1.0);
    for (int i = next++; i < j.samples; i = next++) results[i] = run_sample(s, c, h, j, g, i, dur, send, start);
  };
  const int threads = std::clamp(j.threads > 0 ? j.threads : static_cast<int>(std::thread::hardware_concurrency()),
                                 1, j.samples);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();

  const int K = s.positions();
  out.critical_share.assign(K, 0.0);
  out.critical_counts.assign(K, 0);
  std::vector<double> bubbles;
  long double sum = 0;
  for (const SampleResult& r : results) {
    out.step_ns.push_back(r.step_ns);
    bubbles.push_back(r.bubble);
    sum += r.step_ns;
    for (int d = 0; d < K; ++d) out.critical_share[d] += r.share[d] / j.samples;
    out.critical_counts[std::max_element(r.share.begin(), r.share.end()) - r.share.begin()]++;
  }
  out.mean_ns = static_cast<double>(sum / j.samples);
  long double sq = 0;
  for (int64_t x : out.step_ns) sq += (x - out.mean_ns) * (x - out.mean_ns);
  out.stddev_ns = j.samples > 1 ? std::sqrt(static_cast<double>(sq / (j.samples - 1))) : 0.0;
  std::vector<int64_t> sorted = out.step_ns;
  std::sort(sorted.begin(), sorted.end());
  out.min_ns = sorted.front();
  out.max_ns = sorted.back();
  out.p50_ns = nearest_rank(sorted, 0.50);
  out.p90_ns = nearest_rank(sorted, 0.90);
  out.p99_ns = nearest_rank(sorted, 0.99);
  out.bubble_mean = std::accumulate(bubbles.begin(), bubbles.end(), 0.0) / j.samples;
  out.bubble_p50 = nearest_rank_double(bubbles, 0.50);
  out.bubble_p99 = nearest_rank_double(bubbles, 0.99);
  return out;
}

Json distribution_to_json(const StepDistribution& d, const JitterSpec& j) {
  auto ms = [](double ns) { return ns / 1e6; };
  Json critical = Json::array();
  for (std::size_t p = 0; p < d.critical_share.size(); ++p) {
    critical.push_back({{"position", p}, {"share", d.critical_share[p]}, {"bottleneck_samples", d.critical_counts[p]}});
  }
  constexpr int kBins = 20;
  const double lo = ms(static_cast<double>(d.min_ns));
  const double width = std::max(ms(static_cast<double>(d.max_ns - d.min_ns)) / kBins, 1e-9);
  std::vector<int64_t> counts(kBins, 0);
  for (int64_t x : d.step_ns) counts[std::min(kBins - 1, static_cast<int>((ms(static_cast<double>(x)) - lo) / width))]++;
  Json out = {{"samples", d.samples},
              {"seed", j.seed},
              {"jitter_cv", j.cv},
              {"link_jitter_cv", j.link_cv},
              {"straggler", {{"probability", j.straggler_probability}, {"slowdown", j.straggler_slowdown}}},
              {"deterministic_ms", ms(static_cast<double>(d.deterministic_ns))},
              {"mean_ms", ms(d.mean_ns)},
              {"stddev_ms", ms(d.stddev_ns)},
              {"min_ms", ms(static_cast<double>(d.min_ns))},
              {"p50_ms", ms(static_cast<double>(d.p50_ns))},
              {"p90_ms", ms(static_cast<double>(d.p90_ns))},
              {"p99_ms", ms(static_cast<double>(d.p99_ns))},
              {"max_ms", ms(static_cast<double>(d.max_ns))},
              {"bubble", {{"mean", d.bubble_mean}, {"p50", d.bubble_p50}, {"p99", d.bubble_p99}}},
              {"critical_path", critical},
              {"histogram", {{"lo_ms", lo}, {"bin_ms", width}, {"counts", counts}}}};
  if (!j.stage_cv.empty()) out["stage_cv"] = j.stage_cv;
  return out;
}

}  // namespace pipescope
