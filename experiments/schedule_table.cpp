// Builds the schedule comparison table (see schedule_table.h): each built-in schedule
// is generated, simulated on the setting's uniform costs and judged by its longest
// device span, the zero-bubble paper's measure.
#include "experiments/schedule_table.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "core/error.h"
#include "planner/zero_bubble_search.h"
#include "sim/simulator.h"
#include "sim/stage_span.h"

namespace pipescope {

namespace {
constexpr int64_t kActivationBytes = 1000;  // one micro-batch of one whole stage
}

CostModel table_costs(const Schedule& schedule, const TableSetting& t) {
  const int v = std::max(1, schedule.stages() / schedule.positions());
  CostModel c;
  for (int s = 0; s < schedule.stages(); ++s) {
    StageCost st;
    st.first_layer = s;
    st.end_layer = s + 1;
    st.forward_ns = ms_to_ns(t.forward_ms / v);
    st.backward_input_ns = ms_to_ns(t.input_ms / v);
    st.backward_weight_ns = ms_to_ns(t.weight_ms / v);
    st.backward_ns = st.backward_input_ns + st.backward_weight_ns;
    st.recompute_ns = st.forward_ns;
    st.activation_bytes = kActivationBytes / v;
    st.input_bytes = s == 0 ? 0 : 1;
    st.send_bytes = 1;
    c.stages.push_back(st);
  }
  for (int d = 0; d < schedule.positions(); ++d) {
    c.position_device.push_back(d);
    c.position_devices.push_back({d});
  }
  c.stage_position = schedule.stage_position;
  return c;
}

Hardware table_hardware(const TableSetting& t) {
  Hardware h = Hardware::ideal(t.devices);
  h.link = {0.0, t.comm_ms * 1000.0};  // latency only: bandwidth 0 = infinitely fast
  return h;
}

namespace {

TableRow evaluate(const std::string& label, const Schedule& s, const TableSetting& t) {
  SimOptions o;
  o.record_timeline = true;
  const StepReport r = simulate(s, table_costs(s, t), table_hardware(t), o);
  TableRow row;
  row.schedule = label;
  row.step_ms = r.step_ns / 1e6;
  row.span_ms = longest_span(r) / 1e6;
  row.bubble = row.span_ms / (t.microbatches * (t.forward_ms + t.input_ms + t.weight_ms)) - 1.0;
  int64_t peak = 0;
  for (const PositionReport& st : r.positions) peak = std::max(peak, st.peak_activation_bytes);
  row.peak_microbatches = static_cast<double>(peak) / kActivationBytes;
  return row;
}

}  // namespace

std::vector<TableRow> schedule_table(const TableSetting& t) {
  std::vector<TableRow> rows;
  const int K = t.devices, M = t.microbatches;
  for (ScheduleKind kind : schedule_kinds()) {
    if (is_asynchronous(kind)) continue;  // one step of theirs is 1F1B's; build/bin/async_table compares their steady state
    const std::string name = to_string(kind);
    try {
      if (kind == ScheduleKind::ZeroBubbleAuto) {
        for (int cap : {K, 2 * K - 1, 2 * K}) {
          const Schedule probe = make_zb_auto_unit(K, M, cap);
          ZeroBubbleSearchReport found;
          const Schedule s = search_zero_bubble(table_costs(probe, t), table_hardware(t), cap, M, &found);
          std::ostringstream label;  // the cap bound: no order with N alive per device is shorter
          label << std::fixed << std::setprecision(1) << name << " N=" << cap << " (bound " << found.cap_bound_ns / 1e6 << ")";
          rows.push_back(evaluate(label.str(), s, t));
        }
        continue;
      }
      const int v = required_chunks(kind) == 0 ? 2 : required_chunks(kind);
      rows.push_back(evaluate(kind == ScheduleKind::Interleaved ? name + " v=2" : name,
                              make_schedule({kind, K, M, v}), t));
    } catch (const InputError& e) {
      TableRow row;
      row.schedule = name;
      row.refused = e.what();
      rows.push_back(row);
    }
  }
  return rows;
}

std::string table_markdown(const TableSetting& t, const std::vector<TableRow>& rows) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  out << "p = " << t.devices << ", m = " << t.microbatches << ", T_F = " << t.forward_ms << ", T_B = " << t.input_ms
      << ", T_W = " << t.weight_ms << ", T_comm = " << t.comm_ms << " ms; bound m (T_F + T_B + T_W) = "
      << t.microbatches * (t.forward_ms + t.input_ms + t.weight_ms) << " ms\n\n"
      << "| schedule | longest device span (ms) | bubble | step from t = 0 (ms) | peak activations (micro-batches) |\n"
      << "|---|---:|---:|---:|---:|\n";
  for (const TableRow& r : rows) {
    if (!r.refused.empty()) {
      out << "| " << r.schedule << " | refused: " << r.refused << " | | | |\n";
      continue;
    }
    out << "| " << r.schedule << " | " << r.span_ms << " | " << std::setprecision(1) << 100.0 * r.bubble << "% | "
        << r.step_ms << " | " << std::setprecision(1) << r.peak_microbatches << " |\n";
  }
  return out.str();
}

}  // namespace pipescope
