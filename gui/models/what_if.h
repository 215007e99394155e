// What-if: the hardware a plan is simulated on, changed by the GUI's what-if
// controls without editing the hardware file: every link's bandwidth and latency
// (within and between nodes alike), and one device's speed (0.5 = that device
// computes at half speed, a straggler). Unset fields keep the file's values, so
// WhatIf{} changes nothing: apply_what_if(h, {}) == h. Beside the hardware, the
// runtime semantics `simulate` takes as flags: --optimizer-step, --p2p and --runtime
// (evaluate(), the plans search and sample_plan() read them; apply_what_if leaves them alone).
//   Hardware h = apply_what_if(file, {.bandwidth_gb_per_s = 25, .slow_device = 3, .slow_speed = 0.5});
#pragma once

#include "core/hardware.h"
#include "core/plan.h"
#include "core/runtime_costs.h"
#include "sim/simulator.h"

#include <memory>

namespace pipescope::gui {

struct WhatIf {
  double bandwidth_gb_per_s = 0;  // > 0: every link's bandwidth; 0: as the hardware
  double latency_us = -1;         // >= 0: every link's latency; < 0: as the hardware
  int slow_device = -1;           // >= 0: this device's speed is multiplied by slow_speed
  double slow_speed = 1.0;
  // A flushed schedule's step boundary (post-validation: 3 steps, ranked by their steady
  // state, as `plan` ranks it) and how point-to-point transfers hold the devices.
  OptimizerStep optimizer_step = OptimizerStep::Synchronized;
  P2p p2p = P2p::Overlapped;
  // What the runtime spends around the ops (pipescope-gui --runtime FILE); null: the ops alone.
  std::shared_ptr<const RuntimeCosts> runtime;
  bool active() const { return bandwidth_gb_per_s > 0 || latency_us >= 0 || (slow_device >= 0 && slow_speed != 1.0); }
  bool operator==(const WhatIf&) const = default;
};

// Throws InputError when slow_device is not a device of `hardware` or slow_speed <= 0.
Hardware apply_what_if(Hardware hardware, const WhatIf& what_if);

}  // namespace pipescope::gui
