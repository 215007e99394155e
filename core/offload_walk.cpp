// The host tracks of activation offload and the walk's hooks (core/offload_walk.h). Times
// are integer nanoseconds; a track's bookings never go back in time (PS_INVARIANT).
#include "core/offload_walk.h"

#include <algorithm>

#include "core/invariant.h"

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

HostTraffic::HostTraffic(const HostLink& link, int devices, std::size_t slots, int microbatches,
                         TimelineRecorder* recorder)
    : link_(link), M_(microbatches), recorder_(recorder), slot_(slots), pending_(static_cast<std::size_t>(devices)),
      to_host_free_(static_cast<std::size_t>(devices), 0), to_device_free_(static_cast<std::size_t>(devices), 0),
      sent_(static_cast<std::size_t>(devices), 0), changes_(static_cast<std::size_t>(devices)) {}

int64_t HostTraffic::offload(int d, int stage, int mb, int64_t bytes, int64_t at) {
  const std::size_t dd = static_cast<std::size_t>(d), slot = static_cast<std::size_t>(stage) * M_ + mb;
  const int64_t start = std::max(at, to_host_free_[dd]);
  PS_INVARIANT(start >= to_host_free_[dd], "time went backwards on a host track");
  to_host_free_[dd] = start + link_.to_host.busy_ns(bytes);
  slot_[slot] = {bytes, to_host_free_[dd] + link_.to_host.latency_ns(), -1, false, false};
  pending_[dd].push_back(slot);
  sent_[dd] += bytes;
  changes_[dd].push_back({slot_[slot].on_host_ns, bytes});
  if (recorder_) recorder_->host_transfer(d, true, stage, mb, start, slot_[slot].on_host_ns - start);
  return slot_[slot].on_host_ns;
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

OffloadWalk::OffloadWalk(const Schedule& s, const HostLink& link, std::vector<int64_t> slot_bytes,
                         const std::vector<std::size_t>& first_op, StashMoves& moves, TimelineRecorder* recorder)
    : s_(s), M_(s.microbatches()), bytes_(std::move(slot_bytes)), need_(reload_needs(s)), first_op_(first_op),
      moves_(moves), host_(link, s.positions(), bytes_.size(), M_, recorder),
      delay_(static_cast<std::size_t>(s.positions()), 0) {}

void OffloadWalk::settle(int d, int64_t t) {
  host_.settle(d, t, [&](std::size_t slot, int64_t bytes, int64_t when) { moves_.release(d, slot, bytes, when); });
}

void OffloadWalk::start_reload(int d, std::size_t slot, int64_t at) {
  const int64_t back = host_.reload(d, static_cast<int>(slot / M_), static_cast<int>(slot % M_), at);
  moves_.reload(d, slot, back, at, host_.reload_done(slot));
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
  moves_.offload(d, slot, bytes_[slot], host_.offload(d, op.stage, op.microbatch, bytes_[slot], end));
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
