// A prediction's header, rows and notes from the walk's totals (sim/sim_report.h).
#include "sim/sim_report.h"

#include <algorithm>

#include "core/op_rules.h"
#include "sim/sim_steps.h"

namespace pipescope {

namespace {

// Position d's row: its layers, busy time and bubble, static and peak bytes.
PositionReport position_row(int d, const CostModel& c, const Hardware& h, const WalkTotals& w) {
  PositionReport st;
  st.index = d;
  int64_t params = 0;
  for (int s : w.stages_of[d]) {
    st.layers.emplace_back(c.stages[s].first_layer, c.stages[s].end_layer);
    params += c.stages[s].parameter_bytes;
  }
  st.hardware_devices = c.position_devices[d];
  st.busy_ns = w.busy[d];
  st.bubble_fraction = bubble_fraction(static_cast<double>(w.busy[d]), 1, static_cast<double>(w.end));
  st.static_bytes = static_bytes(params, c.optimizer_state_factor);
  st.weight_bytes = params;
  st.gradient_bytes = params;
  st.optimizer_bytes = st.static_bytes - 2 * params;
  st.peak_activation_bytes = w.peak_act[d];
  st.peak_memory_bytes = st.static_bytes + w.peak_total[d];
  st.weight_versions = w.peak_versions[d];
  st.weight_version_bytes = (w.peak_versions[d] - 1) * params;
  st.transient_bytes = transient_share(st);
  st.fits = h.memory_bytes == 0 || st.peak_memory_bytes <= h.memory_bytes;
  return st;
}

}  // namespace

void fill_prediction(StepReport& r, const Schedule& s, const CostModel& c, const Hardware& h, const SimOptions& o,
                     const WalkTotals& w, bool blocking, bool post_validation) {
  const int K = s.positions(), S = s.stages();
  r.model = o.model;
  r.schedule = s.name;
  r.num_positions = K;
  r.chunks = std::max(1, S / K);
  r.microbatch_size = c.microbatch_size;
  r.batch_size = c.batch_size;
  r.recompute = recompute_from_r_ops(s.r_ops);
  r.memory_limit_bytes = h.memory_bytes;
  if (h.host_link) {
    r.host_memory_limit_bytes = h.host_link->memory_bytes;
    r.host_node_memory_limit_bytes = h.host_link->node_memory_bytes;
  }
  r.microbatches = s.step_microbatches();
  r.weight_update = s.weight_update;
  if (post_validation) r.optimizer_step = to_string(OptimizerStep::PostValidation);
  r.simulated_ops = static_cast<int64_t>(s.num_ops());
  set_step_ends(r, w.step_end);
  int64_t total_busy = 0;
  for (int d = 0; d < K; ++d) {
    r.positions.push_back(position_row(d, c, h, w));
    total_busy += w.busy[d];
  }
  r.bubble_fraction = bubble_fraction(static_cast<double>(total_busy), K, static_cast<double>(w.end));
  add_prediction_notes(r, s, c, h, blocking, post_validation);
  if (o.runtime && o.runtime->any()) r.notes.push_back(runtime_note(*o.runtime));
  if (o.p2p == P2p::Batched) {
    r.notes.push_back("p2p: batched (torch's _batch_p2p, the zero-bubble runtime): a transfer starts when its sender "
                      "has posted it after its op and its receiver before the op that consumes it; the receiver waits, "
                      "the sender runs on");
  }
}

}  // namespace pipescope
