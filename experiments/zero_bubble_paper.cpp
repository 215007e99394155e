// Builds the zero-bubble paper's table (see zero_bubble_paper.h): for each setting the
// paper's handcrafted orders and zb-auto at the two byte budgets, every one simulated
// with optimizer post-validation over several steps and judged by the paper's bubble.
#include "experiments/zero_bubble_paper.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <sstream>

#include "core/schedule.h"
#include "experiments/schedule_table.h"
#include "planner/zero_bubble_search.h"
#include "sim/simulator.h"
#include "sim/stage_span.h"

namespace pipescope {

int64_t paper_layer_stash_bytes(const PaperModel& m) {
  const int64_t h = m.hidden, s = m.sequence, b = m.microbatch_size, a = m.heads;
  return 34 * h * s * b + 5 * a * s * s * b;
}

int64_t paper_layer_weight_grad_bytes(const PaperModel& m) {
  return int64_t{32} * m.hidden * m.sequence * m.microbatch_size;
}

namespace {

TableSetting table_setting(const PaperSetting& p) {
  return {p.model->devices, p.microbatches, p.forward_ms, p.input_ms, p.weight_ms, p.comm_ms};
}

// layers/p transformer layers per stage (the paper's p divides layers + 2: embedding and head)
int64_t stage_bytes(const PaperModel& m, int64_t per_layer) {
  return static_cast<int64_t>(std::llround(static_cast<double>(per_layer) * m.layers / m.devices));
}

double bubble(int64_t step_ns, const PaperSetting& p) {
  const double work_ns = p.microbatches * (ms_to_ns(p.forward_ms) + ms_to_ns(p.input_ms) + ms_to_ns(p.weight_ms));
  return (static_cast<double>(step_ns) - work_ns) / static_cast<double>(step_ns);
}

// The steady-state step of `s` over `steps` simulated steps.
int64_t steady_step_ns(const Schedule& s, const CostModel& costs, const Hardware& hw, OptimizerStep step, P2p p2p,
                       int steps) {
  SimOptions o;
  o.record_timeline = false;
  o.steps = steps;
  o.optimizer_step = step;
  o.p2p = p2p;
  return simulate(s, costs, hw, o).steady_state_step_ns;
}

// The paper's bubble of `s` from the steady-state step under post-validation.
double steady_bubble(const Schedule& s, const CostModel& costs, const Hardware& hw, const PaperSetting& p, int steps) {
  return bubble(steady_step_ns(s, costs, hw, OptimizerStep::PostValidation, P2p::Overlapped, steps), p);
}

struct Searched {
  double steady = 0, span = 0, bound = 0;
  std::string start;
};

// zb-auto at `budget_bytes` per device, each candidate simulated with `p2p`.
Schedule search(const PaperSetting& p, const CostModel& costs, const Hardware& hw, int64_t budget_bytes, P2p p2p,
                ZeroBubbleSearchReport* found) {
  const int K = p.model->devices, M = p.microbatches;
  ZeroBubbleSearchOptions o;
  o.activation_budget_bytes.assign(static_cast<std::size_t>(K), budget_bytes);
  o.p2p = p2p;
  return search_zero_bubble(costs, hw, M, M, found, o);
}

Searched search_at(const PaperSetting& p, const CostModel& costs, const Hardware& hw, int64_t budget_bytes, int steps) {
  ZeroBubbleSearchReport found;
  const Schedule s = search(p, costs, hw, budget_bytes, P2p::Overlapped, &found);
  return {steady_bubble(s, costs, hw, p, steps), bubble(found.span_ns, p), bubble(found.cap_bound_ns, p), found.start};
}

// Samples per GPU per second of `s` on the paper's runtime (PaperThroughput).
double throughput(const Schedule& s, const CostModel& costs, const Hardware& hw, const PaperSetting& p,
                  OptimizerStep step, int steps) {
  const int64_t step_ns = steady_step_ns(s, costs, hw, step, P2p::Batched, steps);
  const double samples = static_cast<double>(p.microbatches) * p.model->microbatch_size;
  return samples / (static_cast<double>(step_ns) / 1e9) / p.model->devices;
}

}  // namespace

CostModel paper_costs(const PaperSetting& p) {
  const int K = p.model->devices, M = p.microbatches;
  CostModel c = table_costs(make_1f1b(K, M), table_setting(p));
  const int64_t stash = stage_bytes(*p.model, paper_layer_stash_bytes(*p.model));
  const int64_t keep = stage_bytes(*p.model, paper_layer_weight_grad_bytes(*p.model));
  for (StageCost& st : c.stages) {
    st.activation_bytes = stash;
    st.freed_at_input_bytes = stash - keep;
  }
  c.weight_grad_counted = true;
  return c;
}

Hardware paper_hardware(const PaperSetting& p) { return table_hardware(table_setting(p)); }

PaperRow zero_bubble_paper_row(const PaperSetting& p, int steps) {
  PaperRow row;
  row.paper = p;
  const int K = p.model->devices, M = p.microbatches;
  const CostModel costs = paper_costs(p);
  const Hardware hw = paper_hardware(p);
  const int64_t stash = costs.stages[0].activation_bytes;
  const Searched one = search_at(p, costs, hw, K * stash, steps);
  const Searched two = search_at(p, costs, hw, 2 * K * stash, steps);
  row.zb_1p = one.steady, row.zb_1p_span = one.span, row.start_1p = one.start;
  row.zb_2p = two.steady, row.zb_2p_span = two.span, row.start_2p = two.start;
  row.bound_2p = two.bound;
  row.ours_1f1b = steady_bubble(make_1f1b(K, M), costs, hw, p, steps);
  row.ours_zb_h1 = steady_bubble(make_zb_h1(K, M), costs, hw, p, steps);
  row.ours_zb_h2 = steady_bubble(make_zb_h2(K, M), costs, hw, p, steps);
  return row;
}

std::vector<PaperRow> zero_bubble_paper_table(int steps) {
  std::vector<PaperRow> rows;
  for (const PaperSetting& p : kPaperSettings) rows.push_back(zero_bubble_paper_row(p, steps));
  return rows;
}

PaperThroughput zero_bubble_paper_throughput(const PaperSetting& p, int steps) {
  const int K = p.model->devices, M = p.microbatches;
  const CostModel costs = paper_costs(p);
  const Hardware hw = paper_hardware(p);
  const int64_t stash = costs.stages[0].activation_bytes;
  PaperThroughput row;
  row.paper = p;
  row.interleaved_chunks = (p.model->layers + 2) / K;
  const auto post = OptimizerStep::PostValidation, sync = OptimizerStep::Synchronized;
  row.f1b1 = throughput(make_1f1b(K, M), costs, hw, p, sync, steps);
  const Schedule interleaved = make_interleaved(K, M, row.interleaved_chunks);
  row.f1b1_i = throughput(interleaved, table_costs(interleaved, table_setting(p)), hw, p, sync, steps);
  const Schedule zb_1p = search(p, costs, hw, K * stash, P2p::Batched, nullptr);
  row.zb_1p = throughput(zb_1p, costs, hw, p, post, steps);
  const Schedule zb_2p = search(p, costs, hw, 2 * K * stash, P2p::Batched, nullptr);
  row.zb_2p = throughput(zb_2p, costs, hw, p, post, steps);
  row.zb_2p_synchronized = throughput(zb_2p, costs, hw, p, sync, steps);
  const Schedule zb_v = make_zb_v(K, M);
  row.zb_v = throughput(zb_v, table_costs(zb_v, table_setting(p)), hw, p, post, steps);
  return row;
}

std::vector<PaperThroughput> zero_bubble_paper_throughputs(int steps) {
  std::vector<PaperThroughput> rows;
  for (const PaperSetting& p : kPaperSettings) rows.push_back(zero_bubble_paper_throughput(p, steps));
  return rows;
}

namespace {

std::string setting_label(const PaperSetting& p) {
  return std::string(p.model->name) + " m=" + std::to_string(p.microbatches);
}

// Counts the rows where `holds` is true; names the others.
PaperClaim count_claim(const std::string& claim, const std::vector<PaperThroughput>& rows,
                       const std::function<bool(const PaperThroughput&)>& applies,
                       const std::function<bool(const PaperThroughput&)>& holds) {
  PaperClaim c{claim, 0, 0, false, ""};
  for (const PaperThroughput& r : rows) {
    if (!applies(r)) continue;
    ++c.of;
    if (holds(r)) {
      ++c.agree;
    } else {
      c.detail += (c.detail.empty() ? "not on " : ", ") + setting_label(r.paper);
    }
  }
  c.holds = c.agree == c.of;
  return c;
}

double gain(double post, double sync) { return post / sync - 1.0; }

}  // namespace

std::vector<PaperClaim> paper_claims(const std::vector<PaperThroughput>& rows) {
  const auto all = [](const PaperThroughput&) { return true; };
  const auto zb_v_settings = [](const PaperThroughput& r) { return r.paper.model != &kPaper1_5B; };
  std::vector<PaperClaim> claims;
  claims.push_back(count_claim("Table 4: ZB-2p is the fastest of 1F1B, 1F1B-I, ZB-1p, ZB-2p", rows, all,
                               [](const PaperThroughput& r) {
                                 return r.zb_2p > std::max({r.f1b1, r.f1b1_i, r.zb_1p});
                               }));
  claims.push_back(count_claim("Table 4: ZB-1p is faster than 1F1B", rows, all,
                               [](const PaperThroughput& r) { return r.zb_1p > r.f1b1; }));
  claims.push_back(count_claim("Table 4: 1F1B is the slowest", rows, all, [](const PaperThroughput& r) {
    return r.f1b1 < std::min({r.f1b1_i, r.zb_1p, r.zb_2p});
  }));
  PaperClaim most = count_claim("Table 4: ZB-1p is ahead of 1F1B-I in most settings (more than half)", rows, all,
                                [](const PaperThroughput& r) { return r.zb_1p > r.f1b1_i; });
  most.holds = 2 * most.agree > most.of;
  claims.push_back(most);
  claims.push_back(count_claim("Table 6: ZB-V > ZB-1p > 1F1B (6.2B-28.3B)", rows, zb_v_settings,
                               [](const PaperThroughput& r) { return r.zb_v > r.zb_1p && r.zb_1p > r.f1b1; }));
  // Table 10 on each model's smallest m (its measured ZB-2p matches Table 4's there, as
  // transcribed); agreement: the predicted gain within kGainPoints of the measured one.
  constexpr double kGainPoints = 0.02;
  PaperClaim t10{"Table 10: ZB-2p's gain from post-validation, within 2 points", 0, 0, false, ""};
  std::ostringstream detail;
  detail << std::fixed << std::setprecision(1);
  for (const PaperPostValidation& measured : kPaperPostValidation) {
    const auto first = std::find_if(rows.begin(), rows.end(),
                                    [&](const PaperThroughput& r) { return r.paper.model == measured.model; });
    if (first == rows.end()) continue;
    const double predicted = gain(first->zb_2p, first->zb_2p_synchronized);
    const double paper = gain(measured.post_validation, measured.synchronized);
    ++t10.of;
    if (std::abs(predicted - paper) <= kGainPoints) ++t10.agree;
    detail << (t10.of > 1 ? "; " : "") << measured.model->name << " " << 100 * predicted << "% vs " << 100 * paper
           << "%";
  }
  t10.detail = detail.str();
  t10.holds = t10.agree == t10.of;
  claims.push_back(t10);
  return claims;
}

std::string throughput_markdown(const std::vector<PaperThroughput>& rows) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3);
  out << "| model | p | m | 1F1B | 1F1B-I (v) | ZB-1p | ZB-2p | ZB-V | ZB-2p synchronized | post-validation gain |\n"
      << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const PaperThroughput& r : rows) {
    const PaperSetting& p = r.paper;
    out << "| " << p.model->name << " | " << p.model->devices << " | " << p.microbatches << " | " << r.f1b1 << " | "
        << r.f1b1_i << " (" << r.interleaved_chunks << ") | " << r.zb_1p << " | " << r.zb_2p << " | " << r.zb_v
        << " | " << r.zb_2p_synchronized << " | " << std::setprecision(1)
        << 100 * gain(r.zb_2p, r.zb_2p_synchronized) << "% |\n"
        << std::setprecision(3);
  }
  out << "\n| what the paper measured | settings that agree | holds | detail |\n|---|---:|---|---|\n";
  for (const PaperClaim& c : paper_claims(rows)) {
    out << "| " << c.claim << " | " << c.agree << " / " << c.of << " | " << (c.holds ? "yes" : "no") << " | "
        << c.detail << " |\n";
  }
  return out.str();
}

std::string paper_markdown(const std::vector<PaperRow>& rows) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(4);
  out << "| model | p | m | 1F1B paper / ours | ZB-H1 paper / ours | ZB-H2 paper / ours | ZB-1p paper | zb-auto at p M_F |"
         " ZB-2p paper | zb-auto at 2p M_F | bound at 2p M_F |\n"
      << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const PaperRow& r : rows) {
    const PaperSetting& p = r.paper;
    out << "| " << p.model->name << " | " << p.model->devices << " | " << p.microbatches << " | " << p.bubble_1f1b
        << " / " << r.ours_1f1b << " | " << p.bubble_zb_h1 << " / " << r.ours_zb_h1 << " | " << p.bubble_zb_h2 << " / "
        << r.ours_zb_h2 << " | " << p.bubble_zb_1p << " | " << r.zb_1p << " | " << p.bubble_zb_2p << " | " << r.zb_2p
        << " | " << r.bound_2p << " |\n";
  }
  return out.str();
}

}  // namespace pipescope
