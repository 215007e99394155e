#include "gui/models/what_if.h"

#include <string>

#include "core/error.h"

namespace pipescope::gui {

Hardware apply_what_if(Hardware h, const WhatIf& w) {
  if (!w.active()) return h;
  for (Link* link : {&h.link, &h.inter_node}) {
    if (w.bandwidth_gb_per_s > 0) link->bandwidth_gb_per_s = w.bandwidth_gb_per_s;
    if (w.latency_us >= 0) link->latency_us = w.latency_us;
  }
  if (w.slow_device >= 0 && w.slow_speed != 1.0) {
    if (w.slow_device >= h.devices) {
      throw InputError("what-if: slow device " + std::to_string(w.slow_device) + " is not one of the " +
                       std::to_string(h.devices) + " devices of " + h.name);
    }
    if (!(w.slow_speed > 0)) throw InputError("what-if: device speed must be above 0, got " + std::to_string(w.slow_speed));
    if (h.speed.empty()) h.speed.assign(static_cast<std::size_t>(h.devices), 1.0);
    h.speed[static_cast<std::size_t>(w.slow_device)] *= w.slow_speed;
  }
  h.name += " (what-if)";
  return h;
}

}  // namespace pipescope::gui
