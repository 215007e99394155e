// Builds the zero-bubble paper's table (see zero_bubble_paper.h): for each setting the
// paper's handcrafted orders and zb-auto at the two byte budgets, every one simulated
// with optimizer post-validation over several steps and judged by the paper's bubble.
#include "experiments/zero_bubble_paper.h"

#include <cmath>
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

// The paper's bubble of `s` from the steady-state step under post-validation.
double steady_bubble(const Schedule& s, const PaperSetting& p, int steps) {
  SimOptions o;
  o.record_timeline = false;
  o.steps = steps;
  o.optimizer_step = OptimizerStep::PostValidation;
  return bubble(simulate(s, paper_costs(p), paper_hardware(p), o).steady_state_step_ns, p);
}

struct Searched {
  double steady = 0, span = 0, bound = 0;
  std::string start;
};

Searched search_at(const PaperSetting& p, int64_t budget_bytes, int steps) {
  const CostModel costs = paper_costs(p);
  const Hardware hw = paper_hardware(p);
  const int K = p.model->devices, M = p.microbatches;
  ZeroBubbleSearchOptions o;
  o.activation_budget_bytes.assign(static_cast<std::size_t>(K), budget_bytes);
  ZeroBubbleSearchReport found;
  const Schedule s = search_zero_bubble(costs, hw, M, M, &found, o);
  return {steady_bubble(s, p, steps), bubble(found.span_ns, p), bubble(found.cap_bound_ns, p), found.start};
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
  const int64_t stash = paper_costs(p).stages[0].activation_bytes;
  const Searched one = search_at(p, K * stash, steps);
  const Searched two = search_at(p, 2 * K * stash, steps);
  row.zb_1p = one.steady, row.zb_1p_span = one.span, row.start_1p = one.start;
  row.zb_2p = two.steady, row.zb_2p_span = two.span, row.start_2p = two.start;
  row.bound_2p = two.bound;
  row.ours_1f1b = steady_bubble(make_1f1b(K, M), p, steps);
  row.ours_zb_h1 = steady_bubble(make_zb_h1(K, M), p, steps);
  row.ours_zb_h2 = steady_bubble(make_zb_h2(K, M), p, steps);
  return row;
}

std::vector<PaperRow> zero_bubble_paper_table(int steps) {
  std::vector<PaperRow> rows;
  for (const PaperSetting& p : kPaperSettings) rows.push_back(zero_bubble_paper_row(p, steps));
  return rows;
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
