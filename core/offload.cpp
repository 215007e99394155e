// The offload policy and fractions as flags and plan-file fields; what the simulator does
// with them is sim/offload.h's.
#include "core/offload.h"

#include <cmath>
#include <sstream>

#include "core/error.h"

namespace pipescope {

std::string to_string(OffloadPolicy policy) {
  switch (policy) {
    case OffloadPolicy::None: return "none";
    case OffloadPolicy::All: return "all";
    case OffloadPolicy::Selective: return "selective";
  }
  return "none";
}

OffloadPolicy parse_offload_policy(const std::string& name) {
  if (name == "none") return OffloadPolicy::None;
  if (name == "all") return OffloadPolicy::All;
  if (name == "selective") return OffloadPolicy::Selective;
  throw InputError("--offload: expected none, all or selective, got \"" + name + "\"");
}

double Offload::fraction_of(int stage) const {
  if (fraction.empty()) return 1.0;
  if (fraction.size() == 1) return fraction[0];
  return fraction[static_cast<std::size_t>(stage)];
}

int64_t Offload::offloaded_bytes(int stage, int64_t stash_bytes) const {
  if (!active() || stash_bytes <= 0) return 0;
  return std::llround(fraction_of(stage) * static_cast<double>(stash_bytes));
}

std::vector<double> parse_offload_fraction(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !std::isfinite(v)) {
      throw InputError("--offload-fraction: expected a number in [0, 1] or a comma-separated list of them, got \"" +
                       text + "\"");
    }
    out.push_back(v);
  }
  if (out.empty()) throw InputError("--offload-fraction: expected a number in [0, 1], got \"\"");
  return out;
}

void check_offload(const Offload& o, int stages, const Hardware& hardware, const std::string& where,
                   const std::string& fraction_where) {
  if (!o.active()) return;
  const std::string& named = fraction_where.empty() ? where : fraction_where;
  if (o.fraction.size() > 1 && static_cast<int>(o.fraction.size()) != stages) {
    throw InputError(named + ": expected one fraction or " + std::to_string(stages) + " (one per stage), got " +
                     std::to_string(o.fraction.size()));
  }
  for (std::size_t k = 0; k < o.fraction.size(); ++k) {
    if (!(o.fraction[k] >= 0.0 && o.fraction[k] <= 1.0)) {
      std::ostringstream v;
      v << o.fraction[k];
      throw InputError(named + ": fraction[" + std::to_string(k) + "] expected in [0, 1], got " + v.str());
    }
  }
  if (!hardware.host_link) {
    throw InputError(where + " " + to_string(o.policy) + ": the hardware file (" +
                     (hardware.source.empty() ? std::string("none given") : hardware.source) +
                     ") has no \"host_link\" (how fast a device reaches host memory); add one or give --hardware");
  }
}

void check_host_capacity(const StepReport& r, const Hardware& h, const std::string& how) {
  if (r.offload == "none" || !h.host_link) return;
  const std::string file = h.source.empty() ? std::string("the hardware") : h.source;
  const int64_t device = h.host_link->memory_bytes, node = h.host_link->node_memory_bytes;
  std::vector<int64_t> per_node;
  for (const PositionReport& s : r.positions) {
    if (device > 0 && s.host_peak_bytes > device) {
      throw InputError(file + ": host_link.memory_bytes: position " + std::to_string(s.index) + " holds " +
                       std::to_string(s.host_peak_bytes) + " bytes on the host at its peak, over the " +
                       std::to_string(device) + " the file gives each device (" + how + " to report it only)");
    }
    for (int dev : s.hardware_devices) {
      const std::size_t n = h.devices_per_node > 0 ? static_cast<std::size_t>(dev / h.devices_per_node) : 0;
      if (per_node.size() <= n) per_node.resize(n + 1, 0);
      per_node[n] += s.host_peak_bytes;
    }
  }
  for (std::size_t n = 0; node > 0 && n < per_node.size(); ++n) {
    if (per_node[n] > node) {
      throw InputError(file + ": host_link.node_memory_bytes: the positions on node " + std::to_string(n) + " hold " +
                       std::to_string(per_node[n]) + " bytes on the host at their peaks together, over the " +
                       std::to_string(node) + " the file gives each node (" + how + " to report it only)");
    }
  }
}

Offload offload_from_json(const JsonReader& r) {
  Offload o;
  const std::string name = r["policy"].as_string();
  if (name != "none" && name != "all" && name != "selective") {
    r["policy"].fail("expected \"none\", \"all\" or \"selective\", got \"" + name + "\"");
  }
  o.policy = parse_offload_policy(name);
  if (r.has("fraction")) {
    const JsonReader f = r["fraction"];
    if (f.json().is_array()) {
      o.fraction = f.as_doubles(0.0);
      if (o.fraction.empty()) f.fail("expected at least one fraction");
      for (std::size_t k = 0; k < o.fraction.size(); ++k) {
        if (o.fraction[k] > 1.0) f.fail("expected fractions in [0, 1], got " + std::to_string(o.fraction[k]));
      }
    } else {
      o.fraction = {f.as_double(0.0, 1.0)};
    }
  }
  return o;
}

Json offload_to_json(const Offload& o) {
  Json out = {{"policy", to_string(o.policy)}};
  if (o.fraction.size() == 1) out["fraction"] = json_number(o.fraction[0]);
  if (o.fraction.size() > 1) out["fraction"] = json_numbers(o.fraction);
  return out;
}

}  // namespace pipescope
