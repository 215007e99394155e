// Fuzz target: a pipescope.runtime file (core/runtime_costs.h) on arbitrary bytes. A file
// that reads must write out and read back to the same text, and the simulator must charge
// it on a small plan without breaking its invariants (time never goes backwards: an op
// term below zero still leaves every op at >= 0 ns; PS_INVARIANT aborts otherwise).
#include "core/runtime_costs.h"
#include "fuzz/fuzz_readers.h"
#include "sim/simulator.h"

using namespace pipescope;

namespace {

CostModel small_costs() {
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return fuzz::read_write_read(
      data, size,
      [](const JsonReader& r) {
        RuntimeCosts rt = runtime_costs_from_json(r);
        static const CostModel costs = small_costs();
        SimOptions o;
        o.runtime = &rt;
        o.p2p = rt.p2p.value_or(P2p::Overlapped);
        for (const Schedule& s : {make_1f1b(2, 3), make_zb_h1(2, 3)}) {
          if (simulate(s, costs, Hardware::ideal(2), o).step_ns < 0) __builtin_trap();
        }
        return rt;
      },
      [](const RuntimeCosts& rt) { return runtime_costs_to_json(rt); });
}
