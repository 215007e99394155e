// Fuzz target: a pipescope.runtime file (core/runtime_costs.h) on arbitrary bytes. A file
// that reads must write out and read back to the same text, and the simulator must charge
// it on a small plan without breaking its invariants (time never goes backwards: an op
// term below zero still leaves every op at >= 0 ns; PS_INVARIANT aborts otherwise).
#include "core/runtime_costs.h"
#include "fuzz/fuzz_costs.h"
#include "fuzz/fuzz_readers.h"
#include "sim/simulator.h"

using namespace pipescope;


extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return fuzz::read_write_read(
      data, size,
      [](const JsonReader& r) {
        RuntimeCosts rt = runtime_costs_from_json(r);
        static const CostModel costs = fuzz::two_stage_costs();
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
