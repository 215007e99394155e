// The enumeration and the branch and bound of llm/layout_search.h. Describe, then run:
// every candidate is listed (validated, its memory and bound computed) before the first
// simulation; the simulations then run in (bound, key) order.
#include "llm/layout_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "llm/balanced_split.h"
#include "llm/collectives.h"
#include "llm/framework.h"
#include "llm/layout_search_internal.h"
#include "llm/memory.h"
#include "llm/pipeline_schedule.h"

namespace pipescope {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

auto key(const ParallelLayout& l) {
  return std::make_tuple(l.t, l.cp, l.ep, l.d, l.p, l.v, l.micro_batch, static_cast<int>(l.recompute),
                         static_cast<int>(l.sharding), l.sequence_parallel ? 1 : 0,
                         static_cast<int>(layout_schedule(l)), l.tp_comm_overlap ? 1 : 0);
}

bool faster(const LlmCandidate& a, const LlmCandidate& b) {
  if (a.step_ns != b.step_ns) return a.step_ns < b.step_ns;
  return key(a.layout) < key(b.layout);
}

// In increasing order; k * k <= n in int64, so no k overflows whatever n is (2^31 - 1 included).
std::vector<int> divisors(int n) {
  std::vector<int> low, high;
  for (int64_t k = 1; k * k <= n; ++k) {
    if (n % k != 0) continue;
    low.push_back(static_cast<int>(k));
    if (k * k != n) high.push_back(static_cast<int>(n / k));
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// The dimensions of result.dimensions, by index while the search runs (every candidate
// touches all of them: no string keys in the loop), named once it ends.
constexpr std::size_t kDimensions = 12;
constexpr std::array<const char*, kDimensions> kDimensionNames = {
    "t", "sp", "cp", "ep", "p", "d", "v", "schedule", "b", "recompute", "sharding", "tp-comm-overlap"};

// The dimension values one layout has, in kDimensionNames' order.
std::array<int, kDimensions> dimension_values(const ParallelLayout& l) {
  return {l.t, l.sequence_parallel ? 1 : 0, l.cp, l.ep, l.p, l.d, l.v, static_cast<int>(layout_schedule(l)),
          l.micro_batch, static_cast<int>(l.recompute), static_cast<int>(l.sharding), l.tp_comm_overlap ? 1 : 0};
}

class Search {
 public:
  Search(const LlmSearchRequest& q, const GpuModel& gpu) : q_(q), gpu_(gpu), offer_(framework_offer(q.framework)) {
    r_.capacity = q.memory_bytes > 0 ? q.memory_bytes : static_cast<double>(gpu.node.memory_bytes);
    r_.headroom = q.headroom_bytes >= 0 ? q.headroom_bytes : offer_.reserve.bytes(r_.capacity);
  }

  LlmSearchResult run() {
    check_request();
    for (const std::array<int, 4>& tuple : degree_tuples(q_.gpus)) enumerate_tuple(tuple);
    if (r_.fitting == 0) refuse_nothing_fits();
    branch_and_bound();
    for (std::size_t i = 0; i < kDimensions; ++i) {
      if (!dimensions_[i].empty()) r_.dimensions[kDimensionNames[i]] = std::move(dimensions_[i]);
    }
    explain_search(r_, gpu_);
    return std::move(r_);
  }

 private:
  // A layout's splits that fit: the even one first (where it fits), then the balanced one.
  struct Entry {
    std::vector<LlmCandidate> splits;
    int64_t bound_ns = 0;  // the least of theirs
  };
  struct BalancedTry {
    std::vector<int> chunks;  // empty: none, or the same as the even split
    double peak = 0;
  };

  // Every number of the request in its range (llm/layout_check.h's limits) before a loop
  // or a product uses it; a pin is 0 (search) or a value, never negative.
  void check_request() const {
    if (q_.gpus < 1) throw InputError("--gpus: expected a positive integer, got " + str(q_.gpus));
    check_range("--gpus", q_.gpus, 1, kMaxGpus);
    if (q_.global_batch < 1) {
      throw InputError("--global-batch-size: expected a positive integer, got " + str(q_.global_batch));
    }
    check_range("--global-batch-size", q_.global_batch, 1, kMaxBatch);
    for (auto [flag, pin, most] : {std::tuple{"--tensor-model-parallel-size", q_.t, kMaxGpus},
                                   {"--context-parallel-size", q_.cp, kMaxGpus},
                                   {"--expert-model-parallel-size", q_.ep, kMaxGpus},
                                   {"--pipeline-model-parallel-size", q_.p, kMaxGpus},
                                   {"--virtual-pipeline-size", q_.v, kMaxVirtualStages},
                                   {"--micro-batch-size", q_.micro_batch, kMaxBatch}}) {
      check_range(flag, pin, 0, most);
    }
    check_range("--max-micro-batch-size", q_.max_micro_batch, 1, kMaxBatch);
    check_range("--max-virtual-stages", q_.max_v, 1, kMaxVirtualStages);
    if (!std::isfinite(q_.memory_bytes) || q_.memory_bytes < 0) {
      throw InputError("--memory-gb: expected a finite number of GB >= 0 (0: the GPU file's), got " +
                       std::to_string(q_.memory_bytes / 1e9));
    }
    const int64_t pinned = static_cast<int64_t>(std::max(q_.t, 1)) * std::max(q_.cp, 1) * std::max(q_.p, 1);
    if (q_.gpus % pinned != 0) {
      throw InputError("--gpus: the pinned t * cp * p = " + str(std::max(q_.t, 1)) + " * " + str(std::max(q_.cp, 1)) +
                       " * " + str(std::max(q_.p, 1)) + " = " + str(pinned) + " does not divide " + str(q_.gpus) +
                       " GPUs");
    }
    ParallelLayout order;
    order.order = q_.order;
    check_rank_order(order);  // before the search, not once per layout
    if (q_.top < 1) throw InputError("--top: expected a positive integer, got " + str(q_.top));
    if (q_.schedule) check_schedule_pin(*q_.schedule);
    if (r_.capacity <= 0) {
      throw InputError("", "--gpu", "the GPU file gives no memory_bytes to search against: pass --memory-gb");
    }
    // a headroom asked for must leave memory to search; the framework's default may not (a
    // tiny --memory-gb), which the search then reports as nothing fitting
    if (!std::isfinite(q_.headroom_bytes) || q_.headroom_bytes >= 0) {
      const double asked = std::isfinite(q_.headroom_bytes) ? r_.headroom : q_.headroom_bytes;  // NaN: r_ took the reserve
      if (std::string why = headroom_refusal(asked, r_.capacity); !why.empty()) throw InputError(why);
    }
    validate_layout(q_.shape, ParallelLayout{}, 1);  // the shape's own flags (--hidden-size, ...)
  }

  // --schedule: a kind the framework runs, and of those one llm/ can time.
  void check_schedule_pin(ScheduleKind kind) const {
    if (const std::string why = schedule_offer_refusal(offer_, kind); !why.empty()) throw InputError(why);
  }

  static bool pinned_out(int pin, int value) { return pin > 0 && pin != value; }

  // The schedules searched with p ranks and v chunks: the framework's that take v (p = 1:
  // no pipeline, 1f1b), less those the pin excludes.
  std::vector<ScheduleKind> schedule_options(int p, int v) const {
    if (p == 1) {
      if (q_.schedule && *q_.schedule != ScheduleKind::OneFOneB) return {};  // a pinned pipeline schedule needs p > 1
      return {ScheduleKind::OneFOneB};
    }
    std::vector<ScheduleKind> out;
    for (ScheduleKind k : offer_.llm_schedules) {
      if (schedule_takes_chunks(k, v) && (!q_.schedule || *q_.schedule == k)) out.push_back(k);
    }
    return out;
  }

  void enumerate_tuple(const std::array<int, 4>& tuple) {
    const auto [t, cp, d, p] = tuple;
    if (pinned_out(q_.t, t) || pinned_out(q_.cp, cp) || pinned_out(q_.p, p)) return;
    if ((t > 1 && !offer_.tensor_parallel) || (cp > 1 && !offer_.context_parallel)) return;
    ++r_.factorizations;
    TransformerShape shape = q_.shape;
    shape.vocabulary = padded_vocabulary(q_.shape.vocabulary, t, q_.vocab_divisible_by);
    ParallelLayout base;
    base.t = t, base.cp = cp, base.d = d, base.p = p;
    base.precision = q_.precision, base.order = q_.order;
    base.attention = q_.attention, base.fp8 = implied_fp8(q_.precision, q_.fp8);
    base.fused_elementwise = q_.fused_elementwise;
    base.selective = selective_policy(q_.framework);
    for (int ep : ep_options(shape, d * cp)) {
      for (bool sp : t > 1 ? offer_.sequence_parallel : std::vector<bool>{false}) {
        for (bool overlap : overlap_options(base, t, sp)) {
          for (int v : v_options(shape.layers, p)) {
            for (ScheduleKind kind : schedule_options(p, v)) {
              ParallelLayout l = base;
              l.ep = ep, l.sequence_parallel = sp, l.v = v, l.schedule = kind, l.tp_comm_overlap = overlap;
              l.layers_per_chunk = even_chunks(shape.layers, l);
              enumerate_batches(shape, l, refusal(shape, l));
            }
          }
        }
      }
    }
  }

  // The TP overlap where the framework runs it (t > 1 with SP, the TP group inside a node), or as pinned.
  std::vector<bool> overlap_options(ParallelLayout l, int t, bool sp) const {
    l.tp_comm_overlap = true;
    const bool possible = t > 1 && sp && offer_.tp_comm_overlap && tp_overlap_refusal(l, gpu_.gpus_per_node()).empty();
    if (q_.tp_comm_overlap) return {*q_.tp_comm_overlap && possible};
    return possible ? std::vector<bool>{false, true} : std::vector<bool>{false};
  }

  std::vector<int> ep_options(const TransformerShape& shape, int dcp) const {
    if (shape.experts == 0 || !offer_.expert_parallel) return {1};
    std::vector<int> out;
    for (int ep : divisors(shape.experts)) {
      if (dcp % ep == 0 && !pinned_out(q_.ep, ep)) out.push_back(ep);
    }
    return out;
  }

  std::vector<int> v_options(int layers, int p) const {
    std::vector<int> out;
    const std::vector<int> ranks = rank_layers(layers, p);
    const int fewest = ranks.empty() ? 0 : *std::min_element(ranks.begin(), ranks.end());
    const int most = ranks.empty() ? 0 : *std::max_element(ranks.begin(), ranks.end());
    for (int v : divisors(std::max(most, 1))) {
      const bool allowed = v == 1 || (p > 1 && v <= q_.max_v && v <= fewest && !schedule_options(p, v).empty());
      if (allowed && !pinned_out(q_.v, v)) out.push_back(v);
    }
    return out;
  }

  // Why validate_layout refuses every layout that differs from l0 only in b, M, recompute
  // and sharding (what the framework refuses of each is framework_refusal's, per candidate):
  // "" when it does not.
  // M = 2p passes every schedule's rule on M (enumerate_batches checks the real M).
  std::string refusal(const TransformerShape& shape, const ParallelLayout& l0) const {
    ParallelLayout any_m = l0;
    any_m.microbatches = 2 * l0.p;
    try {
      validate_layout(shape, any_m, q_.gpus);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  void enumerate_batches(const TransformerShape& shape, const ParallelLayout& l0, const std::string& refused) {
    // A pinned b alone, else the powers of two up to --max-micro-batch-size (int64: no doubling overflows).
    std::vector<int> batches;
    if (q_.micro_batch > 0) batches.push_back(q_.micro_batch);
    for (int64_t b = 1; q_.micro_batch == 0 && b <= q_.max_micro_batch; b *= 2) batches.push_back(static_cast<int>(b));
    for (int b : batches) {
      if (q_.global_batch % (static_cast<int64_t>(b) * l0.d) != 0) continue;
      // One layout, its fields set in place for each candidate (no copy per candidate).
      ParallelLayout l = l0;
      l.micro_batch = b, l.microbatches = static_cast<int>(q_.global_batch / (static_cast<int64_t>(b) * l0.d));
      if (!schedule_refusal(l).empty()) continue;  // e.g. interleaved: M a multiple of p (Megatron's rule)
      for (Recompute rc : offer_.recomputes) {
        for (Sharding sh : offer_.shardings_for(l0.p)) {
          if (l0.d * l0.cp == 1 && sh != Sharding::None) continue;  // nothing to shard over
          l.recompute = rc, l.sharding = sh;
          set_framework_overlap(q_.framework, q_.options.overlap_grad_reduce, q_.options.overlap_param_gather, l,
                                q_.options.overlap_p2p);
          // what validate_job refuses of every job: torch's Schedule1F1B M >= p, torch's and
          // DeepSpeed's expert parallelism (t, sharding), the precision and rank order asked, ...
          if (std::string why = framework_refusal(offer_, l); !why.empty()) {
            if (runtime_refused_.empty()) runtime_refused_ = std::move(why);
            continue;
          }
          consider(shape, l, refused);
        }
      }
    }
  }

  // One layout, tried with the even split (l's) and, for p > 1, the balanced one beside it
  // (llm/balanced_split.h): one entry of the search, fitting when either split fits, its
  // bound the smaller of theirs; the branch and bound times both and keeps the faster.
  void consider(const TransformerShape& shape, const ParallelLayout& l, const std::string& refused) {
    ++r_.enumerated;
    if (q_.progress && r_.enumerated % 4096 == 0) q_.progress({r_.enumerated, r_.valid, r_.fitting, 0, true});
    const std::array<int, kDimensions> values = dimension_values(l);
    if (!refused.empty()) {
      for (std::size_t i = 0; i < kDimensions; ++i) {
        DimensionValue& dv = dimensions_[i][values[i]];
        if (dv.invalid.empty()) dv.invalid = refused;
      }
      return;
    }
    ++r_.valid;
    Entry e;
    const LlmMemory even_memory = llm_memory(shape, l, walked(l));
    double peak = add_split(shape, l, even_memory.peak(), false, e);
    const BalancedTry balanced = l.p > 1 && q_.balanced_split ? balanced_split(shape, l, even_memory) : BalancedTry{};
    if (!balanced.chunks.empty()) {
      ParallelLayout b = l;
      b.layers_per_chunk = balanced.chunks;
      peak = std::min(peak, add_split(shape, b, balanced.peak, true, e));
    }
    const bool fits = !e.splits.empty();
    if (fits && e.splits.size() == 1 && !balanced.chunks.empty()) {  // one of the two splits does not fit
      LlmCandidate& only = e.splits.front();
      only.other_split = only.balanced ? chunk_layers(shape, l) : balanced.chunks;
      only.other_fits = false;
    }
    if (fits) {
      e.bound_ns = e.splits.front().bound_ns;
      for (const LlmCandidate& c : e.splits) e.bound_ns = std::min(e.bound_ns, c.bound_ns);
      ++r_.fitting;
    }
    for (std::size_t i = 0; i < kDimensions; ++i) {
      DimensionValue& dv = dimensions_[i][values[i]];
      ++dv.valid;
      if (dv.min_need == 0 || peak < dv.min_need) dv.min_need = peak;
      if (!fits) continue;
      ++dv.fitting;
      if (dv.best_bound < 0 || e.bound_ns < dv.best_bound) dv.best_bound = e.bound_ns;
    }
    if (fits) fitting_.push_back(std::move(e));
  }

  // Adds the split l (its peak known) to the entry when it fits; returns the peak.
  double add_split(const TransformerShape& shape, const ParallelLayout& l, double peak, bool balanced, Entry& e) {
    if (r_.smallest_need == 0 || peak < r_.smallest_need) r_.smallest_need = peak, r_.smallest_layout = l;
    if (peak > r_.usable()) return peak;
    LlmCandidate c;
    c.layout = l, c.vocabulary = shape.vocabulary, c.peak_bytes = peak, c.balanced = balanced;
    c.bound_ns = bound_from_costs(shape, l, gpu_, step_options(l), rank_costs(shape, l, gpu_, cached_times(shape, l)));
    e.splits.push_back(std::move(c));
    return peak;
  }

  // The balanced split of l's layers and its peak (chunks empty: the same as l's even one).
  // Where it does not fit, the ranks that overflow keep at most their even count of layers
  // and the split is balanced again under those caps: a rank that cannot hold more layers
  // gets none, so the fit is never worse than the even split's for them.
  BalancedTry balanced_split(const TransformerShape& shape, const ParallelLayout& l, const LlmMemory& even) {
    const LayerTimes& lt = cached_times(shape, l);
    const SplitCosts costs = split_costs(shape, lt.dense, lt.moe, lt.embedding, lt.head);
    const std::vector<int> mine = chunk_layers(shape, l);
    ParallelLayout b = l;
    // Uncapped, the split depends on the layer times and (p, v, V) alone: once per those.
    const auto k = std::make_tuple(l.t, l.sequence_parallel, l.cp, l.ep, static_cast<int>(l.recompute), l.micro_batch,
                                   l.p, l.v, v_shaped(layout_schedule(l)));
    auto it = balanced_.find(k);
    if (it == balanced_.end()) it = balanced_.emplace(k, balanced_chunks(shape.layers, l, costs)).first;
    b.layers_per_chunk = it->second;
    if (b.layers_per_chunk.empty() || b.layers_per_chunk == mine) return {};
    LlmMemory m = llm_memory(shape, b, walked(b));
    if (m.peak() > r_.usable()) {
      std::vector<int> caps(static_cast<std::size_t>(l.p), shape.layers);
      for (const RankMemory& rank : m.stages) {
        const auto r = static_cast<std::size_t>(rank.rank);
        if (rank.total() > r_.usable()) caps[r] = even.stages[r].layers;
      }
      b.layers_per_chunk = balanced_chunks(shape.layers, l, costs, caps);
      if (b.layers_per_chunk.empty() || b.layers_per_chunk == mine) return {};
      m = llm_memory(shape, b, walked(b));
    }
    return {b.layers_per_chunk, m.peak()};
  }

  // The in-flight peaks of the layout's schedule, walked once per (kind, p, v, M).
  const InFlight* walked(const ParallelLayout& l) {
    const ScheduleKind kind = layout_schedule(l);
    if (l.p == 1 || kind == ScheduleKind::OneFOneB || kind == ScheduleKind::Interleaved) return nullptr;
    const auto k = std::make_tuple(static_cast<int>(kind), l.p, l.v, l.microbatches);
    auto it = in_flight_.find(k);
    if (it == in_flight_.end()) it = in_flight_.emplace(k, schedule_in_flight(kind, l.p, l.v, l.microbatches)).first;
    return &it->second;
  }

  const LayerTimes& cached_times(const TransformerShape& shape, const ParallelLayout& l) {
    const auto k = std::make_tuple(l.t, l.sequence_parallel, l.cp, l.ep, static_cast<int>(l.recompute), l.micro_batch,
                                   l.tp_comm_overlap);
    auto it = times_.find(k);
    if (it == times_.end()) it = times_.emplace(k, layer_times(shape, l, gpu_)).first;
    return it->second;
  }

  [[noreturn]] void refuse_nothing_fits() const {
    constexpr double kGB = 1e9;
    std::ostringstream o;
    o.precision(1);
    if (r_.valid == 0) {
      o << "no layout of " << q_.gpus << " GPUs is valid for this model and --framework " << to_string(q_.framework)
        << " (" << r_.enumerated << " enumerated)";
      if (!runtime_refused_.empty()) o << "; the framework refuses the others, e.g. " << runtime_refused_;
      throw InputError("", "--gpus", o.str());
    }
    o << std::fixed << "no layout fits " << std::max(r_.usable(), 0.0) / kGB << " GB per GPU (" << r_.capacity / kGB << " GB less "
      << r_.headroom / kGB << " GB headroom, --memory-headroom): the smallest need found is "
      << r_.smallest_need / kGB << " GB (" << layout_summary(r_.smallest_layout) << "; " << r_.valid
      << " valid layouts)";
    throw InputError("", "--gpu", o.str());
  }

  void branch_and_bound() {
    std::sort(fitting_.begin(), fitting_.end(), [](const Entry& a, const Entry& b) {
      if (a.bound_ns != b.bound_ns) return a.bound_ns < b.bound_ns;
      return key(a.splits.front().layout) < key(b.splits.front().layout);
    });
    const std::size_t top = static_cast<std::size_t>(q_.top);
    for (const Entry& next : fitting_) {
      if (!q_.exhaustive && r_.best.size() >= top && r_.best.back().step_ns < next.bound_ns) break;
      LlmCandidate c = time_entry(next);
      ++r_.simulated;
      if (q_.progress && r_.simulated % 16 == 0) q_.progress({r_.enumerated, r_.valid, r_.fitting, r_.simulated, false});
      const std::array<int, kDimensions> values = dimension_values(c.layout);
      for (std::size_t i = 0; i < kDimensions; ++i) {
        DimensionValue& dv = dimensions_[i][values[i]];
        if (dv.best_step < 0 || c.step_ns < dv.best_step) dv.best_step = c.step_ns;
      }
      r_.best.insert(std::upper_bound(r_.best.begin(), r_.best.end(), c, faster), std::move(c));
      if (r_.best.size() > top) r_.best.pop_back();
    }
    if (!r_.best.empty()) time_other_split(r_.best.front());
  }

  LlmCandidate time_split(const LlmCandidate& split) {
    TransformerShape shape = q_.shape;
    shape.vocabulary = split.vocabulary;
    LlmCandidate c = time_layout(shape, split.layout, gpu_, step_options(split.layout), walked(split.layout));
    c.balanced = split.balanced, c.other_split = split.other_split, c.other_fits = split.other_fits;
    return c;
  }

  // The faster of the entry's splits (a tie: the even one, as the search chose before). The
  // second is timed only while its bound can still beat the first's step.
  LlmCandidate time_entry(const Entry& e) {
    LlmCandidate first = time_split(e.splits.front());
    if (e.splits.size() == 1) return first;
    const LlmCandidate& other = e.splits.back();
    first.other_split = chunk_layers(q_.shape, other.layout);
    if (other.bound_ns > first.step_ns) return first;
    LlmCandidate second = time_split(other);
    second.other_split = chunk_layers(q_.shape, first.layout);
    first.other_step_ns = second.step_ns, second.other_step_ns = first.step_ns;
    return second.step_ns < first.step_ns ? second : first;
  }

  // The best's other split, timed where the bound spared it, so that the explanation
  // says by how much the chosen split won.
  void time_other_split(LlmCandidate& best) {
    if (best.other_split.empty() || !best.other_fits || best.other_step_ns >= 0) return;
    ParallelLayout l = best.layout;
    l.layers_per_chunk = best.balanced ? even_chunks(q_.shape.layers, l) : best.other_split;
    TransformerShape shape = q_.shape;
    shape.vocabulary = best.vocabulary;
    best.other_step_ns = time_layout(shape, l, gpu_, step_options(l), walked(l)).step_ns;
  }

  const LlmSearchRequest& q_;
  const GpuModel& gpu_;
  const FrameworkOffer& offer_;
  LlmSearchResult r_;
  std::string runtime_refused_;  // the first framework_refusal met, for refuse_nothing_fits
  std::vector<Entry> fitting_;
  std::array<std::map<int, DimensionValue>, kDimensions> dimensions_;  // r_.dimensions by kDimensionNames' index
  std::map<std::tuple<int, bool, int, int, int, int, bool>, LayerTimes> times_;
  std::map<std::tuple<int, int, int, int>, InFlight> in_flight_;
  std::map<std::tuple<int, bool, int, int, int, int, int, int, bool>, std::vector<int>> balanced_;  // balanced_split's
};

}  // namespace

std::vector<std::array<int, 4>> degree_tuples(int gpus) {
  std::vector<std::array<int, 4>> out;
  for (int t : divisors(gpus)) {
    for (int cp : divisors(gpus / t)) {
      for (int p : divisors(gpus / t / cp)) out.push_back({t, cp, gpus / t / cp / p, p});
    }
  }
  return out;
}

std::vector<int> rank_layers(int layers, int p) {
  if (p < 1) return {};
  const int each = (layers + p - 1) / p;
  std::vector<int> out(static_cast<std::size_t>(p), each);
  int deficit = each * p - layers;
  // last, first, second to last, second, ...
  for (int i = 0; deficit > 0; ++i, --deficit) {
    const int rank = i % 2 == 0 ? p - 1 - i / 2 : i / 2;
    --out[static_cast<std::size_t>(rank)];
  }
  return out;
}

std::vector<int> even_chunks(int layers, const ParallelLayout& l) {
  if (l.p * l.v > 0 && layers % (l.p * l.v) == 0) return {};
  return layout_chunks(layers, l.p, l.v, v_shaped(layout_schedule(l)));
}

std::vector<int> layout_chunks(int layers, int p, int v, bool v_shape) {
  const std::vector<int> ranks = rank_layers(layers, p);
  std::vector<int> out(static_cast<std::size_t>(p) * v, 0);
  for (int r = 0; r < p; ++r) {
    const int n = ranks[static_cast<std::size_t>(r)];
    if (n < v) return {};
    for (int c = 0; c < v; ++c) {
      const int chunk = v_shape && c == 1 ? 2 * p - 1 - r : c * p + r;  // rank r's c-th chunk in model order
      out[static_cast<std::size_t>(chunk)] = n / v + (c >= v - n % v ? 1 : 0);
    }
  }
  return out;
}

LlmSearchResult search_layouts(const LlmSearchRequest& request, const GpuModel& gpu) {
  return Search(request, gpu).run();
}

std::string layout_summary(const ParallelLayout& l) {
  std::string out = "t " + str(l.t) + (l.sequence_parallel ? " sp" : "") + " cp " + str(l.cp) + " ep " + str(l.ep);
  out += " d " + str(l.d) + " p " + str(l.p) + " v " + str(l.v) + " b " + str(l.micro_batch);
  out += " M " + str(l.microbatches) + " recompute " + to_string(l.recompute) + " " + to_string(l.sharding);
  if (l.tp_comm_overlap) out += " tp-overlap";
  ParallelLayout by_v = l;
  by_v.schedule.reset();
  if (layout_schedule(l) != layout_schedule(by_v)) {  // not Megatron's default
    out += ' ';
    out += to_string(layout_schedule(l));
  }
  return out;
}

}  // namespace pipescope
