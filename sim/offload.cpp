// The host tracks of activation offload and the selective rule (sim/offload.h). Times
// are integer nanoseconds; a track's bookings never go back in time (PS_INVARIANT).
#include "sim/offload.h"

#include <algorithm>

#include "core/invariant.h"
#include "core/op_rules.h"

namespace pipescope {

std::vector<int64_t> reload_needs(const Schedule& s) {
  const int M = s.microbatches();
  std::vector<int64_t> need;
  std::vector<uint8_t> after_forward(static_cast<std::size_t>(s.stages()) * M, 0);
  for (const std::vector<Op>& ops : s.position_ops) {
    for (const Op& op : ops) {
      const std::size_t slot = static_cast<std::size_t>(op.stage) * M + op.microbatch;
      if (op.kind == OpKind::Forward) {
        after_forward[slot] = 1;
        need.push_back(-1);
      } else {
        need.push_back(after_forward[slot] ? static_cast<int64_t>(slot) : -1);
        after_forward[slot] = 0;
      }
    }
  }
  return need;
}

std::vector<int64_t> offload_all_bytes(const Schedule& s, const CostModel& c, const Offload& offload) {
  const int M = s.microbatches();
  std::vector<int64_t> bytes(static_cast<std::size_t>(s.stages()) * M, 0);
  for (int st = 0; st < s.stages(); ++st) {
    const int64_t b = offload.offloaded_bytes(st, stash_bytes(c.stages[st], s.recompute));
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

HostTraffic::HostTraffic(const HostLink& link, int devices, std::size_t slots, int microbatches,
                         TimelineRecorder* recorder)
    : link_(link), M_(microbatches), recorder_(recorder), slot_(slots), pending_(static_cast<std::size_t>(devices)),
      to_host_free_(static_cast<std::size_t>(devices), 0), to_device_free_(static_cast<std::size_t>(devices), 0),
      sent_(static_cast<std::size_t>(devices), 0), changes_(static_cast<std::size_t>(devices)) {}

void HostTraffic::offload(int d, int stage, int mb, int64_t bytes, int64_t at) {
  const std::size_t dd = static_cast<std::size_t>(d), slot = static_cast<std::size_t>(stage) * M_ + mb;
  const int64_t start = std::max(at, to_host_free_[dd]);
  PS_INVARIANT(start >= to_host_free_[dd], "time went backwards on a host track");
  to_host_free_[dd] = start + link_.to_host.busy_ns(bytes);
  slot_[slot] = {bytes, to_host_free_[dd] + link_.to_host.latency_ns(), -1, false, false};
  pending_[dd].push_back(slot);
  sent_[dd] += bytes;
  changes_[dd].push_back({slot_[slot].on_host_ns, bytes});
  if (recorder_) recorder_->host_transfer(d, true, stage, mb, start, slot_[slot].on_host_ns - start);
}

int64_t HostTraffic::reload(int d, int stage, int mb, int64_t at) {
  const std::size_t dd = static_cast<std::size_t>(d), slot = static_cast<std::size_t>(stage) * M_ + mb;
  Slot& sl = slot_[slot];
  const int64_t start = std::max({at, sl.on_host_ns, to_device_free_[dd]});
  to_device_free_[dd] = start + link_.to_device.busy_ns(sl.bytes);
  sl.back_ns = to_device_free_[dd] + link_.to_device.latency_ns();
  changes_[dd].push_back({sl.back_ns, -sl.bytes});
  if (recorder_) recorder_->host_transfer(d, false, stage, mb, start, sl.back_ns - start);
  if (sl.released) return sl.bytes;
  sl.cancelled = true;
  return 0;
}

std::vector<HostTraffic::Change> HostTraffic::sorted_changes(int d) const {
  std::vector<Change> c = changes_[static_cast<std::size_t>(d)];
  // At one instant a reload's end comes before an arrival: host bytes never double count.
  std::stable_sort(c.begin(), c.end(), [](const Change& a, const Change& b) {
    return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.bytes < b.bytes;
  });
  return c;
}

int64_t HostTraffic::host_peak(int d) const {
  int64_t now = 0, peak = 0;
  for (const Change& c : sorted_changes(d)) peak = std::max(peak, now += c.bytes);
  return peak;
}

void HostTraffic::write_host_memory(Timeline* timeline) const {
  if (!timeline) return;
  for (int d = 0; d < static_cast<int>(changes_.size()); ++d) {
    int64_t now = 0;
    for (const Change& c : sorted_changes(d)) timeline->host_memory.push_back({d, c.time_ns, now += c.bytes});
  }
}

OffloadWalk::OffloadWalk(const Schedule& s, const HostLink& link, std::vector<int64_t> offload_bytes,
                         const std::vector<std::size_t>& first_op, DeviceBytes bytes, TimelineRecorder* recorder)
    : s_(s), M_(s.microbatches()), bytes_(std::move(offload_bytes)), need_(reload_needs(s)), first_op_(first_op),
      b_(bytes), recorder_(recorder), host_(link, s.positions(), bytes_.size(), M_, recorder),
      delay_(static_cast<std::size_t>(s.positions()), 0) {}

void OffloadWalk::settle(int d, int64_t t) {
  const std::size_t dd = static_cast<std::size_t>(d);
  host_.settle(d, t, [&](std::size_t slot, int64_t bytes, int64_t when) {
    b_.held[slot] -= bytes;
    b_.held_total[slot] -= bytes;
    b_.current_act[dd] -= bytes;
    b_.current_total[dd] -= bytes;
    PS_INVARIANT(b_.held[slot] >= 0 && b_.current_act[dd] >= 0, "a device offloaded more than it held");
    if (recorder_) {
      const int64_t transient = b_.current_total[dd] - b_.current_act[dd] - b_.version_bytes[dd];
      recorder_->memory(d, when, b_.current_act[dd], std::max<int64_t>(0, transient), b_.version_bytes[dd]);
    }
  });
}

void OffloadWalk::start_reload(int d, std::size_t slot, int64_t at) {
  const std::size_t dd = static_cast<std::size_t>(d);
  const int64_t back = host_.reload(d, static_cast<int>(slot / M_), static_cast<int>(slot % M_), at);
  b_.held[slot] += back;
  b_.held_total[slot] += back;
  b_.current_act[dd] += back;
  b_.current_total[dd] += back;
  b_.peak_act[dd] = std::max(b_.peak_act[dd], b_.current_act[dd]);
}

int64_t OffloadWalk::before_op(int d, std::size_t flat, int64_t start) {
  const int64_t own = need_[flat];
  if (own >= 0 && host_.offloaded(static_cast<std::size_t>(own))) {
    const int64_t back = host_.reload_done(static_cast<std::size_t>(own));
    if (back > start) {
      delay_[static_cast<std::size_t>(d)] += back - start;
      start = back;
    }
  }
  settle(d, start);
  const bool last = flat + 1 == first_op_[static_cast<std::size_t>(d) + 1];
  const int64_t next = last ? -1 : need_[flat + 1];
  const Op& op = s_.position_ops[static_cast<std::size_t>(d)][flat - first_op_[static_cast<std::size_t>(d)]];
  const int64_t own_slot = static_cast<int64_t>(op.stage) * M_ + op.microbatch;
  const bool after_own_forward = op.kind == OpKind::Forward && next == own_slot;  // booked by after_forward
  if (next >= 0 && !after_own_forward && host_.offloaded(static_cast<std::size_t>(next))) {
    start_reload(d, static_cast<std::size_t>(next), start);
  }
  return start;
}

void OffloadWalk::after_forward(int d, std::size_t flat, int64_t start, int64_t end) {
  const Op& op = s_.position_ops[static_cast<std::size_t>(d)][flat - first_op_[static_cast<std::size_t>(d)]];
  const std::size_t slot = static_cast<std::size_t>(op.stage) * M_ + op.microbatch;
  if (bytes_[slot] <= 0) return;
  host_.offload(d, op.stage, op.microbatch, bytes_[slot], end);
  settle(d, end);
  const bool last = flat + 1 == first_op_[static_cast<std::size_t>(d) + 1];
  if (!last && need_[flat + 1] == static_cast<int64_t>(slot)) start_reload(d, slot, start);
}

void OffloadWalk::fill(PositionReport& st) const {
  st.offloaded_bytes = host_.sent(st.index);
  st.host_peak_bytes = host_.host_peak(st.index);
  st.offload_delay_ns = delay_[static_cast<std::size_t>(st.index)];
}

}  // namespace pipescope
