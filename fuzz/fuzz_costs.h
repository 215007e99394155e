// The plan the fuzz targets of runtime files and measured traces run what they read on:
// two stages on two devices (F 1000 ns, B 2000 ns split evenly, 4 KiB across the cut,
// 1 MiB of parameters each). Small enough that a run takes microseconds.
#pragma once

#include "core/cost_model.h"

namespace pipescope::fuzz {

inline CostModel two_stage_costs() {
  CostModel c;
  for (int s = 0; s < 2; ++s) {
    StageCost x;
    x.first_layer = s;
    x.end_layer = s + 1;
    x.forward_ns = x.recompute_ns = 1000;
    x.backward_ns = 2000;
    x.backward_input_ns = x.backward_weight_ns = 1000;
    x.send_bytes = 4096;
    x.parameter_bytes = 1 << 20;
    c.stages.push_back(x);
    c.position_device.push_back(s);
    c.position_devices.push_back({s});
    c.stage_position.push_back(s);
  }
  return c;
}

}  // namespace pipescope::fuzz
