// The offload decision (all, selective) and the simulator's side of the walk (sim/offload.h).
#include "sim/offload.h"

#include <algorithm>

#include "core/invariant.h"
#include "core/op_rules.h"

namespace pipescope {

std::vector<int64_t> offload_all_bytes(const Schedule& s, const CostModel& c, const Offload& offload) {
  const int M = s.microbatches();
  std::vector<int64_t> bytes(static_cast<std::size_t>(s.stages()) * M, 0);
  for (int st = 0; st < s.stages(); ++st) {
    const int64_t b = offload.offloaded_bytes(st, stash_bytes(c.stages[st], s.r_ops));
    for (int m = 0; m < M; ++m) bytes[static_cast<std::size_t>(st) * M + m] = b;
  }
  return bytes;
}

std::string offload_note(const Offload& offload) {
  std::string note = "offload " + to_string(offload.policy) + ": each F's stash";
  note += offload.fraction.empty() ? "" : " (its offload fraction)";
  note += " goes to host memory on the device's host link after the F and comes back before its B, I or R, "
          "started by the op before that one; it leaves device memory once on the host";
  if (offload.policy == OffloadPolicy::Selective) note += "; only stashes whose round trip delays nothing are sent";
  return note;
}

namespace {

// One device's offload candidates and the ops that need them back, in its op order.
struct DeviceOffloads {
  struct Forward {
    std::size_t slot;
    int64_t end_ns;
  };
  struct Need {
    std::size_t slot;
    int64_t trigger_ns, start_ns;  // the previous op's start; the op's own start
  };
  std::vector<Forward> forwards;
  std::vector<Need> needs;
};

// Whether, with the slots `chosen` offloaded, every reload ends by its op's start.
bool delays_nothing(const DeviceOffloads& dev, const HostLink& link, std::span<const int64_t> bytes,
                    const std::vector<uint8_t>& chosen, std::vector<int64_t>& on_host) {
  int64_t free_h = 0, free_d = 0;
  for (const DeviceOffloads::Forward& f : dev.forwards) {
    if (!chosen[f.slot]) continue;
    free_h = std::max(f.end_ns, free_h) + link.to_host.busy_ns(bytes[f.slot]);
    on_host[f.slot] = free_h + link.to_host.latency_ns();
  }
  for (const DeviceOffloads::Need& n : dev.needs) {
    if (!chosen[n.slot]) continue;
    free_d = std::max({n.trigger_ns, on_host[n.slot], free_d}) + link.to_device.busy_ns(bytes[n.slot]);
    if (free_d + link.to_device.latency_ns() > n.start_ns) return false;
  }
  return true;
}

}  // namespace

std::vector<int64_t> choose_offloads(const Schedule& s, const HostLink& link, std::span<const int64_t> all,
                                     std::span<const int64_t> op_starts, std::span<const int64_t> op_ends) {
  const std::vector<int64_t> need = reload_needs(s);
  std::vector<int64_t> out(all.size(), 0);
  std::vector<uint8_t> chosen(all.size(), 0);
  std::vector<int64_t> on_host(all.size(), 0);
  std::size_t flat = 0;
  for (const std::vector<Op>& ops : s.position_ops) {
    DeviceOffloads dev;
    for (std::size_t i = 0; i < ops.size(); ++i, ++flat) {
      const std::size_t slot = static_cast<std::size_t>(ops[i].stage) * s.microbatches() + ops[i].microbatch;
      if (ops[i].kind == OpKind::Forward && all[slot] > 0) dev.forwards.push_back({slot, op_ends[flat]});
      if (need[flat] >= 0 && all[slot] > 0) dev.needs.push_back({slot, op_starts[flat - 1], op_starts[flat]});
    }
    for (const DeviceOffloads::Forward& f : dev.forwards) {  // greedily in F order
      chosen[f.slot] = 1;
      if (!delays_nothing(dev, link, all, chosen, on_host)) chosen[f.slot] = 0;
    }
  }
  for (std::size_t k = 0; k < all.size(); ++k) out[k] = chosen[k] ? all[k] : 0;
  return out;
}

std::vector<int64_t> offload_decision(const Schedule& s, const CostModel& c, const Hardware& h,
                                      const SimOptions& o) {
  if (!o.offload.active()) return {};
  check_offload(o.offload, s.stages(), h, "--offload");
  std::vector<int64_t> bytes = offload_all_bytes(s, c, o.offload);
  if (o.offload.policy != OffloadPolicy::Selective) return bytes;
  std::vector<int64_t> starts, ends;
  SimOptions plain = o;
  plain.offload = {};
  plain.steps = 1;  // `s` is the walked op list already (post-validation's steps unrolled)
  plain.record_timeline = false;
  plain.op_starts_ns = &starts;
  plain.op_ends_ns = &ends;
  simulate(s, c, h, plain);
  return choose_offloads(s, *h.host_link, bytes, starts, ends);
}

void SimOffload::release(int d, std::size_t slot, int64_t bytes, int64_t when) {
  const std::size_t dd = static_cast<std::size_t>(d);
  b_.held[slot] -= bytes;
  b_.held_total[slot] -= bytes;
  b_.current_act[dd] -= bytes;
  b_.current_total[dd] -= bytes;
  PS_INVARIANT(b_.held[slot] >= 0 && b_.current_act[dd] >= 0, "a device offloaded more than it held");
  if (recorder_) {
    const int64_t transient = b_.current_total[dd] - b_.current_act[dd] - b_.version_bytes[dd];
    recorder_->memory(d, when, b_.current_act[dd], std::max<int64_t>(0, transient), b_.version_bytes[dd]);
  }
}

void SimOffload::reload(int d, std::size_t slot, int64_t back, int64_t, int64_t) {
  const std::size_t dd = static_cast<std::size_t>(d);
  b_.held[slot] += back;
  b_.held_total[slot] += back;
  b_.current_act[dd] += back;
  b_.current_total[dd] += back;
  b_.peak_act[dd] = std::max(b_.peak_act[dd], b_.current_act[dd]);
}

}  // namespace pipescope
