// The lattice search: bisection on the slowest stage's time T, each probe one forward
// sweep of the ideal lattice per stage. Invariant of a sweep for stage s: best[D] holds
// the Pareto front, over the ideals D' <= D reachable in s stages, of the keys a stage
// D \ D' is judged by; a stage's time and memory are (value at D) - (key of D'), so
// "some reachable D' < D gives a stage within T and the limit" reads off best[] of D's
// cover predecessors. Each probe is O(stages x (ideals + cover links) x front size).
#include "planner/dag_partition.h"

#include <algorithm>
#include <array>
#include <limits>

#include "core/error.h"

namespace pipescope {
namespace {

constexpr int kMaxKeys = 6;  // time + up to 5 memory terms

struct Point {
  std::array<int64_t, kMaxKeys> key;  // larger is better in every coordinate
  int from;                           // the ideal D' the keys belong to
};

bool dominates(const Point& a, const Point& b, int m) {
  for (int k = 0; k < m; ++k) {
    if (a.key[k] < b.key[k]) return false;
  }
  return true;
}

void add_to_front(std::vector<Point>& front, const Point& p, int m) {
  for (const Point& q : front) {
    if (dominates(q, p, m)) return;
  }
  front.erase(std::remove_if(front.begin(), front.end(), [&](const Point& q) { return dominates(p, q, m); }), front.end());
  front.push_back(p);
}

// Per-ideal sums that do not depend on the stage: cut bytes, static and activation bytes.
struct IdealSums {
  std::vector<int64_t> cut, stat, act;
};

IdealSums ideal_sums(const DagStageCosts& c, const IdealLattice& lat) {
  IdealSums out;
  const int n = lat.size();
  out.cut.assign(n, 0);
  out.stat.assign(n, 0);
  out.act.assign(n, 0);
  for (int d = 1; d < n; ++d) {
    const int p = lat.parent[d], v = lat.added[d];
    int64_t cut = out.cut[p] + c.output_bytes(v);
    for (int k = lat.closed_begin[d]; k < lat.closed_begin[d + 1]; ++k) cut -= c.output_bytes(lat.closed[k]);
    out.cut[d] = cut;
    out.stat[d] = out.stat[p] + c.static_bytes(v);
    out.act[d] = out.act[p] + c.activation_bytes(v);
  }
  return out;
}

class LatticeSearch {
 public:
  LatticeSearch(const DagStageCosts& c, const IdealLattice& lat)
      : c_(c), lat_(lat), sums_(ideal_sums(c, lat)), n_(lat.size()), S_(c.stages()) {
    memory_ = c.memory_limit() > 0;
    for (int s = 0; s < S_; ++s) {
      const int terms = memory_ ? (c.r_ops() ? static_cast<int>(c.terms(s).size()) : 1) : 0;
      if (1 + terms > kMaxKeys) throw std::logic_error("dag partition: too many memory terms");
    }
    arg_.assign(static_cast<std::size_t>(S_) * n_, -1);
    for (int s = 0; s < S_; ++s) {
      for (int l = 0; l < c.layers(); ++l) compute_.push_back(c.compute_ns(s, l));
    }
    x_.assign(static_cast<std::size_t>(n_), 0);
    // Per stage and ideal, what does not depend on T: the key of D as a stage's start
    // (compute of D - receiving cut(D)) and the base of what a stage ending at D needs
    // (compute of D + the stage's constant + sending cut(D)); a probe subtracts T.
    own_key_.resize(static_cast<std::size_t>(S_) * n_);
    need_base_.resize(static_cast<std::size_t>(S_) * n_);
    for (int s = 0; s < S_; ++s) {
      const int64_t* cost = &compute_[static_cast<std::size_t>(s) * c.layers()];
      for (int d = 1; d < n_; ++d) x_[d] = x_[lat.parent[d]] + cost[lat.added[d]];
      for (int d = 0; d < n_; ++d) {
        own_key_[static_cast<std::size_t>(s) * n_ + d] = x_[d] - c.receive_prev_ns(s, sums_.cut[d]);
        need_base_[static_cast<std::size_t>(s) * n_ + d] = x_[d] + c.stage_constant_ns(s) + c.send_next_ns(s, sums_.cut[d]);
      }
    }
    xmin_.assign(static_cast<std::size_t>(n_), 0);
    for (int d = 1; d < n_; ++d) {
      int64_t cheapest = std::numeric_limits<int64_t>::max();
      for (int s = 0; s < S_; ++s) cheapest = std::min(cheapest, compute_[static_cast<std::size_t>(s) * c.layers() + lat.added[d]]);
      xmin_[d] = xmin_[lat.parent[d]] + cheapest;
    }
    key_.assign(static_cast<std::size_t>(n_), 0);
    from_.assign(static_cast<std::size_t>(n_), -1);
  }

  // True when every stage can stay within T (and memory); then chain() is one such chain.
  bool feasible(int64_t T) {
    std::vector<uint8_t> reach(static_cast<std::size_t>(n_), 0), next(static_cast<std::size_t>(n_), 0);
    reach[0] = 1;
    for (int s = 0; s < S_; ++s) {
      std::fill(next.begin(), next.end(), 0);
      if (memory_) {
        sweep_fronts(s, T, reach, next);
      } else {
        sweep_time(s, T, reach, next);
      }
      std::swap(reach, next);
    }
    return reach[n_ - 1] != 0;
  }

  // The ideals D1 < ... < DS = all of the last feasible probe.
  std::vector<int> chain() const {
    std::vector<int> out(static_cast<std::size_t>(S_));
    int d = n_ - 1;
    for (int s = S_ - 1; s >= 0; --s) {
      out[s] = d;
      d = arg_[static_cast<std::size_t>(s) * n_ + d];
    }
    return out;
  }

 private:
  // The ideals a sweep for stage s needs: a D' that starts stage s must leave at most
  // (S - s) T of work, and a D that ends it holds at most (s + 1) T (xmin: each layer
  // at its cheapest stage). Both bounds grow with D, so the rest never reads skipped ones.
  std::pair<int64_t, int64_t> useful(int s, int64_t T) const {
    auto times = [](int64_t k, int64_t t) { return t > std::numeric_limits<int64_t>::max() / k ? std::numeric_limits<int64_t>::max() : k * t; };
    const int64_t total = xmin_[n_ - 1];
    const int64_t rest = times(S_ - s, T);
    return {rest >= total ? std::numeric_limits<int64_t>::min() : total - rest, times(s + 1, T)};
  }

  // A stage ending at D must leave room for the rest: D = all only for the last stage.
  bool may_end(int s, int d) const { return d > 0 && ((s == S_ - 1) == (d == n_ - 1)); }

  // Time only: the front is one point, the largest key below each ideal.
  void sweep_time(int s, int64_t T, const std::vector<uint8_t>& reach, std::vector<uint8_t>& next) {
    int* arg = &arg_[static_cast<std::size_t>(s) * n_];
    const auto [lo, hi] = useful(s, T);
    for (int d = 0; d < n_; ++d) {
      if (xmin_[d] < lo || xmin_[d] > hi) {
        from_[d] = -1;
        continue;
      }
      int64_t bk = 0;
      int bf = -1;
      for (int k = lat_.below_begin[d]; k < lat_.below_begin[d + 1]; ++k) {
        const int b = lat_.below[k];
        if (from_[b] >= 0 && (bf < 0 || key_[b] > bk)) {
          bk = key_[b];
          bf = from_[b];
        }
      }
      if (bf >= 0 && may_end(s, d)) {
        const int64_t need = need_base_[static_cast<std::size_t>(s) * n_ + d] - T;
        if (bk >= need) {
          next[d] = 1;
          arg[d] = bf;
        }
      }
      if (reach[d]) {
        const int64_t own = own_key_[static_cast<std::size_t>(s) * n_ + d];
        if (bf < 0 || own > bk) {
          bk = own;
          bf = d;
        }
      }
      key_[d] = bk;
      from_[d] = bf;
    }
  }

  // With memory: Pareto fronts of (time key, memory keys).
  void sweep_fronts(int s, int64_t T, const std::vector<uint8_t>& reach, std::vector<uint8_t>& next) {
    const int m = 1 + key_count(s);
    fronts_.resize(static_cast<std::size_t>(n_));  // cleared per ideal, capacity kept
    const auto [lo, hi] = useful(s, T);
    for (int d = 0; d < n_; ++d) {
      fronts_[d].clear();
      if (xmin_[d] < lo || xmin_[d] > hi) continue;
      std::vector<Point>& strict = strict_;
      strict.clear();
      for (int k = lat_.below_begin[d]; k < lat_.below_begin[d + 1]; ++k) {
        for (const Point& p : fronts_[lat_.below[k]]) add_to_front(strict, p, m);
      }
      if (may_end(s, d)) {
        const Point need = needs(s, d, T);
        for (const Point& p : strict) {
          if (dominates(p, need, m)) {
            next[d] = 1;
            arg_[static_cast<std::size_t>(s) * n_ + d] = p.from;
            break;
          }
        }
      }
      if (reach[d]) add_to_front(strict, own(s, d), m);
      fronts_[d].assign(strict.begin(), strict.end());
    }
  }

  int key_count(int s) const {
    if (!memory_) return 0;
    return c_.r_ops() ? static_cast<int>(c_.terms(s).size()) : 1;
  }
  int64_t factor(int s) const {
    int64_t f = 0;
    for (auto [a, cc] : c_.terms(s)) f = std::max(f, a + cc);
    return f;
  }
  // D' as a stage's start for stage s: time key X(D') - receive(cut D'), memory keys.
  Point own(int s, int d) const {
    Point p{};
    p.from = d;
    p.key[0] = own_key_[static_cast<std::size_t>(s) * n_ + d];
    if (memory_) {
      if (!c_.r_ops()) {
        p.key[1] = sums_.stat[d] + factor(s) * sums_.act[d];
      } else {
        int k = 1;
        for (auto [a, cc] : c_.terms(s)) p.key[k++] = sums_.stat[d] + cc * sums_.act[d] - a * sums_.cut[d];
      }
    }
    return p;
  }
  // What a D' must reach for the stage D \ D' to take at most T and fit.
  Point needs(int s, int d, int64_t T) const {
    Point p{};
    p.key[0] = need_base_[static_cast<std::size_t>(s) * n_ + d] - T;
    if (memory_) {
      const int64_t limit = c_.memory_limit();
      if (!c_.r_ops()) {
        p.key[1] = sums_.stat[d] + factor(s) * sums_.act[d] - limit;
      } else {
        int k = 1;
        for (auto [a, cc] : c_.terms(s)) p.key[k++] = sums_.stat[d] + cc * sums_.act[d] - limit;
      }
    }
    return p;
  }

  const DagStageCosts& c_;
  const IdealLattice& lat_;
  IdealSums sums_;
  int n_, S_;
  bool memory_ = false;
  std::vector<int64_t> compute_;  // per stage x layer
  std::vector<int64_t> x_, key_;  // per ideal: compute of D at this stage; best key below
  std::vector<int64_t> xmin_;     // per ideal: its layers' compute, each at its cheapest stage
  std::vector<int> from_;
  std::vector<std::vector<Point>> fronts_;
  std::vector<Point> strict_;
  std::vector<int64_t> own_key_, need_base_;  // per stage x ideal
  std::vector<int> arg_;  // per stage x ideal: the D' chosen
};

std::vector<uint8_t> membership(const IdealLattice& lat, int ideal) {
  std::vector<uint8_t> in(static_cast<std::size_t>(lat.vertices), 0);
  for (int v : lat.members(ideal)) in[v] = 1;
  return in;
}

// The slowest stage of a chain by the explicit (brute-force) rules.
int64_t chain_value(const DagStageCosts& c, const IdealLattice& lat, const std::vector<int>& chain) {
  int64_t worst = 0;
  std::vector<uint8_t> before(static_cast<std::size_t>(lat.vertices), 0);
  for (int s = 0; s < static_cast<int>(chain.size()); ++s) {
    const std::vector<uint8_t> through = membership(lat, chain[s]);
    worst = std::max(worst, c.time_ns(s, before, through));
    before = through;
  }
  return worst;
}

}  // namespace

DagPartition dag_optimal_partition(const DagStageCosts& c, const IdealLattice& lat, const DagPartition* known) {
  DagPartition out;
  if (!lat.complete) return out;
  out.ideals = lat.size();
  LatticeSearch search(c, lat);
  std::vector<int> best;
  int64_t hi = 0;
  const bool have_known = known && known->value != kInfeasible && !known->order.empty();
  if (have_known) {
    hi = known->value;
  } else {
    if (!search.feasible(kInfeasible / 4)) {
      out.exact = lat.all_ideals;  // proved when every downset was tried: nothing fits
      return out;
    }
    best = search.chain();
    hi = chain_value(c, lat, best);
  }
  // Lower bound: the stages together do at least every layer's cheapest compute, and
  // the stage holding the dearest layer at least that layer.
  int64_t total = 0, single = 0;
  for (int l = 0; l < c.layers(); ++l) {
    int64_t cheapest = kInfeasible;
    for (int s = 0; s < c.stages(); ++s) cheapest = std::min(cheapest, c.compute_ns(s, l));
    total += cheapest;
    single = std::max(single, cheapest);
  }
  // Every stage time is a multiple of g, so the bisection steps over multiples of g.
  const int64_t g = c.granularity();
  const int64_t average = (total + c.stages() - 1) / c.stages();
  out.lower_bound = std::max(single, (average + g - 1) / g * g);
  int64_t lo = std::min(hi, out.lower_bound);
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / g / 2 * g;
    if (search.feasible(mid)) {
      best = search.chain();
      hi = chain_value(c, lat, best);
    } else {
      lo = mid + g;
    }
  }
  out.value = hi;
  out.exact = lat.all_ideals || hi <= out.lower_bound;
  if (best.empty()) {  // nothing in this lattice beats the known chain
    out.order = known->order;
    out.ranges = known->ranges;
    return out;
  }
  // Stage of each layer: the first ideal of the chain that holds it.
  std::vector<int> stage(static_cast<std::size_t>(c.layers()), -1);
  for (int s = 0; s < static_cast<int>(best.size()); ++s) {
    for (int v : lat.members(best[s])) {
      if (stage[v] < 0) stage[v] = s;
    }
  }
  for (int s = 0; s < c.stages(); ++s) {
    const int first = static_cast<int>(out.order.size());
    for (int l = 0; l < c.layers(); ++l) {
      if (stage[l] == s) out.order.push_back(l);
    }
    out.ranges.emplace_back(first, static_cast<int>(out.order.size()));
  }
  return out;
}

GraphLattices build_graph_lattices(int layers, const std::vector<std::pair<int, int>>& edges, std::size_t max_ideals) {
  GraphLattices out;
  for (int w = 8; w <= 2 * layers; w *= 2) {
    IdealLattice lattice = build_ideal_lattice(layers, edges, kWindowIdeals, w);
    if (!lattice.complete) break;
    const bool all = lattice.all_ideals;
    out.windows.emplace_back(all ? 0 : w, std::move(lattice));
    if (all) return out;
  }
  IdealLattice all = build_ideal_lattice(layers, edges, max_ideals);
  if (all.complete) out.windows.emplace_back(0, std::move(all));
  return out;
}

namespace {

// Walks the lattices narrowest first, each bisection starting from the best chain so
// far, and stops at the first exact answer. `next(k)` gives lattice k or null.
template <class Next>
DagPartition search_lattices(const DagStageCosts& costs, const Next& next) {
  DagPartition best;
  for (int k = 0; !best.exact; ++k) {
    const std::pair<int, IdealLattice>* lattice = next(k);
    if (!lattice) break;
    DagPartition found = dag_optimal_partition(costs, lattice->second, best.ideals > 0 ? &best : nullptr);
    found.window = lattice->first;
    if (found.ideals == 0) continue;
    // Each search returns the known chain when its lattice holds nothing better.
    if (best.ideals == 0 || found.value <= best.value) best = std::move(found);
  }
  return best;
}

}  // namespace

DagPartition graph_optimal_partition(const GraphLattices& lattices, const Profile& profile, const Hardware& hardware,
                                     const Schedule& schedule, const StageModelSpec& spec) {
  const StageModel model(profile, hardware, schedule, spec);
  const DagStageCosts costs(profile, hardware, schedule, spec, model);
  return search_lattices(costs, [&](int k) {
    return k < static_cast<int>(lattices.windows.size()) ? &lattices.windows[static_cast<std::size_t>(k)] : nullptr;
  });
}

DagPartition graph_optimal_partition(const Profile& profile, const Hardware& hardware, const Schedule& schedule,
                                     const StageModelSpec& spec, std::size_t max_ideals) {
  const StageModel model(profile, hardware, schedule, spec);
  const DagStageCosts costs(profile, hardware, schedule, spec, model);
  const int L = costs.layers();
  // Built one at a time, so that an exact answer on a narrow window skips the rest.
  std::pair<int, IdealLattice> current;
  int w = 8;
  bool all_tried = false;
  return search_lattices(costs, [&](int) -> const std::pair<int, IdealLattice>* {
    while (w <= 2 * L) {
      IdealLattice lattice = build_ideal_lattice(L, costs.edges(), kWindowIdeals, w);
      w *= 2;
      if (!lattice.complete) break;
      if (lattice.all_ideals) all_tried = true, w = 4 * L;
      current = {lattice.all_ideals ? 0 : w / 2, std::move(lattice)};
      return &current;
    }
    w = 4 * L;
    if (all_tried) return nullptr;
    all_tried = true;
    IdealLattice all = build_ideal_lattice(L, costs.edges(), max_ideals);
    if (!all.complete) return nullptr;
    current = {0, std::move(all)};
    return &current;
  });
}

}  // namespace pipescope
