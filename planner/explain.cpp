// The evidence a search hands back: why the winner wins (compared with the runner-up,
// the best plan differing in each choice, and faster plans that do not fit), and every
// candidate as JSON and CSV. Numbers come straight from the simulated candidates.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "core/report.h"
#include "planner/search.h"

namespace pipescope {
namespace {

std::string ms(int64_t ns) { return format_ms(ns) + " ms"; }

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

std::string slower_by(const Candidate& w, const Candidate& c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * (static_cast<double>(c.objective_ns) / w.objective_ns - 1.0));
  return buf;
}

// What tells c apart from the winner, in numbers (the ranked quantity: the step, or its
// sampled statistic under --objective).
std::string contrast(const Candidate& w, const Candidate& c) {
  std::ostringstream out;
  out << c.label() << ": " << ms(c.objective_ns) << " (" << slower_by(w, c) << "), bubble " << percent(c.bubble_fraction)
      << " vs " << percent(w.bubble_fraction) << ", busiest device " << ms(c.slowest_stage_ns) << " vs "
      << ms(w.slowest_stage_ns) << " per micro-batch, peak " << format_bytes(static_cast<double>(c.peak_bytes));
  return out.str();
}

// When memory binds (some candidate does not fit): what each controllable-memory V-shape
// saves and costs against 1F1B on the winner's K, M, replicas and re-materialisation,
// peak bytes against bubble; the plans are the simulated candidates themselves.
std::string memory_tradeoff(const SearchResult& r) {
  const Candidate& w = winner(r);
  auto same_shape = [&](const Candidate& c, ScheduleKind kind) {
    return c.schedule == kind && !c.pruned && c.stages == w.stages && c.microbatches == w.microbatches &&
           c.replicas == w.replicas && c.recompute == w.recompute;
  };
  auto find = [&](ScheduleKind kind) -> const Candidate* {
    for (const Candidate& c : r.candidates) {
      if (same_shape(c, kind)) return &c;
    }
    return nullptr;
  };
  const Candidate* base = find(ScheduleKind::OneFOneB);
  if (base == nullptr) return {};
  std::ostringstream out;
  out << "Memory binds; against 1f1b at K=" << w.stages << " M=" << w.microbatches << " (peak "
      << format_bytes(static_cast<double>(base->peak_bytes)) << ", bubble " << percent(base->bubble_fraction) << "):";
  int listed = 0;
  for (ScheduleKind kind : {ScheduleKind::VMin, ScheduleKind::VHalf, ScheduleKind::VZeroBubble}) {
    const Candidate* c = find(kind);
    if (c == nullptr) continue;
    const double saved = static_cast<double>(base->peak_bytes - c->peak_bytes);
    out << (listed++ ? "; " : " ") << to_string(kind) << (saved >= 0 ? " saves " : " adds ")
        << format_bytes(std::abs(saved)) << " of peak for a bubble of " << percent(c->bubble_fraction)
        << (c->fits ? "" : " (does not fit)");
  }
  if (listed == 0) return {};
  out << ".";
  return out.str();
}

// When memory bound the winner's shape and offload made it fit (consider_offload): what
// each policy saves (the largest cut of a position's peak, and where) and what it costs
// in step time against the run without offload.
std::string offload_tradeoff(const Candidate& w, int64_t limit) {
  if (w.offload_trials.size() < 2) return {};
  const Candidate::OffloadTrial& none = w.offload_trials.front();
  int64_t none_peak = 0;
  for (int64_t b : none.stage_peak_bytes) none_peak = std::max(none_peak, b);
  std::ostringstream out;
  out << "Memory binds: without offload it peaks " << format_bytes(static_cast<double>(none_peak)) << " against "
      << format_bytes(static_cast<double>(limit)) << ";";
  for (std::size_t k = 1; k < w.offload_trials.size(); ++k) {
    const Candidate::OffloadTrial& t = w.offload_trials[k];
    int64_t saved = 0;
    std::size_t where = 0;
    for (std::size_t p = 0; p < t.stage_peak_bytes.size() && p < none.stage_peak_bytes.size(); ++p) {
      if (none.stage_peak_bytes[p] - t.stage_peak_bytes[p] > saved) {
        saved = none.stage_peak_bytes[p] - t.stage_peak_bytes[p];
        where = p;
      }
    }
    out << (k > 1 ? "; " : " ") << to_string(t.policy) << " offload saves " << format_bytes(static_cast<double>(saved))
        << " on stage " << where;
    if (t.step_ns == none.step_ns) {
      out << " at no cost";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * (static_cast<double>(t.step_ns) / none.step_ns - 1.0));
      out << " and costs " << buf << " step";
    }
    out << (t.fits ? "" : " (does not fit)");
  }
  out << "; the plan takes " << (w.offload_chosen ? to_string(w.plan.offload.policy) : std::string("none")) << ".";
  return out.str();
}

}  // namespace

// Under --objective: the winner's sampled statistic, and whether the deterministic
// ranking would have picked another plan.
static std::string objective_sentence(const SearchResult& r) {
  const Candidate& w = winner(r);
  std::ostringstream out;
  out << "Ranked by the " << to_string(r.objective) << " step over " << r.samples << " jittered samples: the winner's is "
      << ms(w.objective_ns) << " (mean " << ms(static_cast<int64_t>(w.mean_ns)) << ", p50 " << ms(w.p50_ns) << ", p99 "
      << ms(w.p99_ns) << "). ";
  if (r.deterministic_winner < 0 || r.deterministic_winner == w.index) {
    out << "The deterministic ranking picks the same plan.";
  } else {
    const Candidate& d = r.candidates[r.deterministic_winner];
    out << "The winner changes against the deterministic ranking, whose winner " << d.label() << " has the shorter "
        << "deterministic step (" << ms(d.step_ns) << " against " << ms(w.step_ns) << ") but a " << to_string(r.objective)
        << " of " << ms(d.objective_ns) << ".";
  }
  return out.str();
}

std::vector<std::string> explain_winner(const SearchResult& r) {
  const Candidate& w = winner(r);
  const auto& cs = r.candidates;
  std::vector<std::string> lines;
  std::ostringstream head;
  const auto pruned = std::count_if(cs.begin(), cs.end(), [](const Candidate& c) { return c.pruned; });
  head << r.candidates.size() << " candidates"
       << (pruned > 0 ? ", " + std::to_string(r.candidates.size() - static_cast<std::size_t>(pruned)) + " simulated, "
                      : std::string(" simulated, "))
       << r.ranking.size() << " fit in "
       << (r.memory_limit_bytes ? format_bytes(static_cast<double>(r.memory_limit_bytes)) : std::string("unbounded memory"))
       << " per device. The winner, " << w.label() << ", has the "
       << (r.objective == Objective::Step ? std::string("shortest step") : "lowest " + to_string(r.objective) + " step")
       << (r.objective == Objective::Step ? ": " : "; deterministic step ") << ms(w.step_ns) << ", "
       << static_cast<int64_t>(w.throughput_samples_per_s + 0.5) << " samples/s, bubble " << percent(w.bubble_fraction)
       << ", peak " << format_bytes(static_cast<double>(w.peak_bytes)) << ".";
  lines.push_back(head.str());
  if (pruned > 0) {
    lines.push_back(std::to_string(pruned) + " zb-auto candidates were not searched: a lower bound of their step is "
                    "slower than the first " + std::to_string(r.exact_top) + " plans (sweep searches them all).");
  }
  if (r.objective != Objective::Step) lines.push_back(objective_sentence(r));
  if (is_asynchronous(w.schedule)) {
    lines.push_back(to_string(w.schedule) + " is asynchronous (considered because of --allow-async): steps overlap "
                    "without a flush and backward passes use stale weights (" +
                    (w.schedule == ScheduleKind::PipeDream
                         ? std::string("weight stashing, K - s weight versions on position s")
                         : std::string("2BW: two weight versions, each update one step late")) +
                    "); its step is the steady state's, after the pipeline has filled.");
  } else {
    const Candidate* best_async = nullptr;
    for (int i : r.ranking) {
      if (is_asynchronous(cs[i].schedule)) {
        best_async = &cs[i];
        break;
      }
    }
    if (best_async) {
      lines.push_back("Best asynchronous plan (--allow-async): " + contrast(w, *best_async) + ".");
    }
  }
  if (r.ranking.size() > 1) lines.push_back("Runner-up " + contrast(w, cs[r.ranking[1]]) + ".");
  // The best fitting plan that differs from the winner in one choice.
  const std::vector<std::pair<std::string, std::function<bool(const Candidate&)>>> choices = {
      {"schedule", [&](const Candidate& c) { return c.schedule != w.schedule; }},
      {"stages K", [&](const Candidate& c) { return c.stages != w.stages; }},
      {"micro-batches M", [&](const Candidate& c) { return c.microbatches != w.microbatches; }},
      {"re-materialisation", [&](const Candidate& c) { return c.recompute != w.recompute; }},
      {"offload", [&](const Candidate& c) { return c.offload_chosen != w.offload_chosen; }},
  };
  for (const auto& [what, differs] : choices) {
    for (int i : r.ranking) {
      if (differs(cs[i])) {
        lines.push_back("Best with another " + what + ": " + contrast(w, cs[i]) + ".");
        break;
      }
    }
  }
  if (std::any_of(cs.begin(), cs.end(), [](const Candidate& c) { return !c.pruned && !c.fits; })) {  // memory binds
    if (const std::string line = memory_tradeoff(r); !line.empty()) lines.push_back(line);
    if (const std::string line = offload_tradeoff(w, r.memory_limit_bytes); !line.empty()) lines.push_back(line);
  }
  int faster_misfits = 0;
  const Candidate* fastest_misfit = nullptr;
  for (const Candidate& c : cs) {
    if (c.fits || c.step_ns >= w.step_ns) continue;
    ++faster_misfits;
    if (!fastest_misfit || c.step_ns < fastest_misfit->step_ns) fastest_misfit = &c;
  }
  if (fastest_misfit) {
    lines.push_back(std::to_string(faster_misfits) + " faster candidates do not fit; the fastest, " + fastest_misfit->label() +
                    " (" + ms(fastest_misfit->step_ns) + "), needs " +
                    format_bytes(static_cast<double>(fastest_misfit->peak_bytes)) + " per device.");
  }
  return lines;
}

Json candidate_to_json(const Candidate& c, int64_t batch) {
  Json stages = Json::array();
  for (std::size_t p = 0; p < c.stage_peak_bytes.size(); ++p) {
    Json layers = Json::array();
    for (std::size_t s = p; s < c.plan.stages.size(); s += static_cast<std::size_t>(c.stages)) {
      layers.push_back({c.plan.stages[s].first_layer, c.plan.stages[s].end_layer});
    }
    stages.push_back({{"layers", layers}, {"devices", c.plan.stages[p].devices}, {"peak_memory_bytes", c.stage_peak_bytes[p]}});
    if (c.plan.offload.active() && p < c.stage_host_peak_bytes.size()) {
      stages.back()["host_peak_bytes"] = c.stage_host_peak_bytes[p];
    }
  }
  Json out = {{"index", c.index},
          {"label", c.label()},
          {"stages", c.stages},
          {"replicas", c.replicas},
          {"microbatches", c.microbatches},
          {"microbatch_size", c.microbatch_size(batch)},
          {"schedule", to_string(c.schedule)},
          {"chunks", c.chunks},
          {"recompute", has_r_ops(c.recompute)},
          {"step_ms", json_number(static_cast<double>(c.step_ns) / 1e6)},
          {"throughput_samples_per_s", json_number(c.throughput_samples_per_s)},
          {"bubble_fraction", json_number(c.bubble_fraction)},
          {"slowest_stage_ms", json_number(static_cast<double>(c.slowest_stage_ns) / 1e6)},
          {"peak_memory_bytes", c.peak_bytes},
          {"fits", c.fits},
          {"pareto", c.pareto},
          {"rank", c.rank},
          {"positions", std::move(stages)}};
  // Graph profiles: the layer order the stages' ranges refer to, when not the listed one.
  if (!c.layer_order.empty()) out["layer_order"] = c.layer_order;
  if (!c.stage_replicas.empty()) out["stage_replicas"] = c.stage_replicas;  // per position
  if (!c.placement.empty()) out["placement"] = c.placement;
  if (c.offload_chosen) out["offload"] = to_string(c.plan.offload.policy);  // taken when memory bound
  if (c.sampled) {
    out["jittered"] = {{"mean_ms", json_number(c.mean_ns / 1e6)},
                       {"p50_ms", json_number(static_cast<double>(c.p50_ns) / 1e6)},
                       {"p99_ms", json_number(static_cast<double>(c.p99_ns) / 1e6)}};
  }
  return out;
}

Json search_to_json(const SearchResult& r, const SearchRequest& q) {
  Json candidates = Json::array();
  for (const Candidate& c : r.candidates) candidates.push_back(candidate_to_json(c, q.batch));
  Json schedules = Json::array();
  for (ScheduleKind k : q.schedules) schedules.push_back(to_string(k));
  return {{"format", "pipescope.sweep"},
          {"version", 1},
          {"model", q.profile.model},
          {"profile", q.profile_path},
          {"hardware", q.hardware.name},
          {"devices", q.devices},
          {"batch_size", q.batch},
          {"schedules", schedules},
          {"partition", to_string(q.partition)},
          {"memory_limit_bytes", r.memory_limit_bytes},
          {"fitting", r.ranking.size()},
          {"objective", to_string(r.objective)},
          {"candidates", std::move(candidates)}};
}

std::string candidates_csv(const SearchResult& r, int64_t batch) {
  std::ostringstream out;
  out << "index,schedule,chunks,stages,replicas,microbatches,microbatch_size,recompute,step_ms,"
         "throughput_samples_per_s,bubble_fraction,slowest_stage_ms,peak_memory_bytes,fits,pareto,rank,"
         "stage_peak_memory_bytes,stage_replicas,placement\n";
  for (const Candidate& c : r.candidates) {
    out << c.index << ',' << to_string(c.schedule) << ',' << c.chunks << ',' << c.stages << ',' << c.replicas << ','
        << c.microbatches << ',' << json_number(c.microbatch_size(batch)).dump() << ',' << (has_r_ops(c.recompute) ? 1 : 0) << ','
        << json_number(static_cast<double>(c.step_ns) / 1e6).dump() << ','
        << json_number(c.throughput_samples_per_s).dump() << ',' << json_number(c.bubble_fraction).dump() << ','
        << json_number(static_cast<double>(c.slowest_stage_ns) / 1e6).dump() << ',' << c.peak_bytes << ','
        << (c.fits ? 1 : 0) << ',' << (c.pareto ? 1 : 0) << ',' << c.rank << ',';
    for (std::size_t p = 0; p < c.stage_peak_bytes.size(); ++p) out << (p ? ";" : "") << c.stage_peak_bytes[p];
    out << ',';
    for (std::size_t p = 0; p < c.stage_replicas.size(); ++p) out << (p ? ";" : "") << c.stage_replicas[p];
    out << ',' << c.placement << '\n';
  }
  return out.str();
}

}  // namespace pipescope
