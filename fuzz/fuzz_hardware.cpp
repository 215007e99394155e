// Fuzz target: hardware_from_json and hardware_to_json on arbitrary bytes, plus the
// link arithmetic the simulator uses for every transfer.
#include "core/hardware.h"
#include "fuzz/fuzz_readers.h"

using namespace pipescope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  return fuzz::read_write_read(
      data, size,
      [](const JsonReader& r) {
        Hardware h = hardware_from_json(r);
        for (int d = 0; d < h.devices && d < 16; ++d) {
          (void)h.device_speed(d);
          const Link& link = h.link_between(0, d);
          (void)link.busy_ns(int64_t{1} << 50);
          (void)link.latency_ns();
        }
        return h;
      },
      [](const Hardware& h) { return hardware_to_json(h); });
}
