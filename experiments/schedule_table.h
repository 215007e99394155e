// The bubble of every built-in schedule on the same per-op times: uniform stages with
// T_F, T_B (input gradient, I) and T_W per op, a link latency T_comm per hop (no
// bandwidth term), p devices and m micro-batches. V-shapes cut each stage into two
// chunks of half the times. Used by the schedule_table program (docs/schedules-new.md).
#pragma once

#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/schedule.h"

namespace pipescope {

struct TableSetting {
  int devices = 8, microbatches = 24;
  double forward_ms = 18.5, input_ms = 18.1, weight_ms = 9.3, comm_ms = 0.6;
};

struct TableRow {
  std::string schedule;            // "zb-h2", "zb-auto N=16", ...
  double step_ms = 0;              // from time 0 to the last op's end
  double span_ms = 0;              // longest device span (first op start to last op end)
  double bubble = 0;               // span / (m (T_F + T_B + T_W)) - 1
  double peak_microbatches = 0;    // largest activation peak, in whole micro-batches
  std::string refused;             // why the schedule does not take this setting
};

// The cost model of `schedule` under the setting: one stage = T_F, T_B, T_W split over
// the device's chunks; 1 byte of activation per micro-batch and chunk.
CostModel table_costs(const Schedule& schedule, const TableSetting& setting);
Hardware table_hardware(const TableSetting& setting);
std::vector<TableRow> schedule_table(const TableSetting& setting);
std::string table_markdown(const TableSetting& setting, const std::vector<TableRow>& rows);

}  // namespace pipescope
