// Activation offload as a walk over a schedule runs it (PipeOffload, Wan et al. 2025): the
// one rule of when a stash goes to host memory and comes back, followed by the simulator
// (sim/simulator.cpp, on its byte counters) and by the CPU executor (exec/runtime/, on real
// buffers), so that both move the same bytes at the same times. Each device has two host
// tracks, one per direction, each carrying one transfer at a time in the order booked;
// neither meets the pipeline's p2p links.
//   offload  when F(s,m) ends, its slot's bytes go to the host: the copy starts at
//            max(F's end, the to-host track free) and is on the host latency after the
//            track is done. The bytes leave the device at the first op boundary (an op's
//            start or end on the device) at or after that: an offload that finishes
//            during an op still counts for that op's peak.
//   reload   the op that needs the stash back (the first op of (s,m) after F: R, B or I)
//            has its reload started by the op before it on the device: at max(that op's
//            start, the offload on the host, the to-device track free). The reloaded bytes
//            count on the device from that op's start; the op that needs them starts no
//            earlier than the reload's end (a late reload delays it). A reload booked
//            before the offload's bytes left the device cancels their leaving (they never
//            left; the copy's time is still paid).
// Invariant: a device's bookings come in its op order at non-decreasing times
// (PS_INVARIANT on the tracks).
//   OffloadWalk w(schedule, link, slot_bytes, first_op, moves, &recorder);
//   start = w.before_op(d, flat, start);  ...  w.settle(d, end);  w.after_forward(d, flat, start, end);
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/hardware.h"
#include "core/report.h"
#include "core/schedule.h"

namespace pipescope {

// Per flat op of `s` (devices in order, each device's ops in its order): the (stage,
// micro-batch) slot, stage * M + mb, whose stash the op needs back after its F (the first
// op of that slot after F), or -1.
std::vector<int64_t> reload_needs(const Schedule& s);

// The host tracks of every device and what each holds on the host.
//   HostTraffic h(link, K, S * M, M, &recorder);  h.offload(d, s, m, bytes, f_end); ...
class HostTraffic {
 public:
  HostTraffic(const HostLink& link, int devices, std::size_t slots, int microbatches, TimelineRecorder* recorder);
  // F(stage, mb) on device d ended at `at`: `bytes` of its stash go to the host. Returns
  // when they are on the host.
  int64_t offload(int d, int stage, int mb, int64_t bytes, int64_t at);
  // The offloads of device d on the host by `t` whose bytes have not left the device yet:
  // release(slot, bytes, when) for each, in order.
  template <class Release>
  void settle(int d, int64_t t, Release&& release) {
    std::deque<std::size_t>& q = pending_[static_cast<std::size_t>(d)];
    while (!q.empty() && (slot_[q.front()].cancelled || slot_[q.front()].on_host_ns <= t)) {
      Slot& sl = slot_[q.front()];
      if (!sl.cancelled) {
        sl.released = true;
        release(q.front(), sl.bytes, sl.on_host_ns);
      }
      q.pop_front();
    }
  }
  // Books the reload of (stage, mb) on device d, started by an op beginning at `at`.
  // Returns the bytes to charge on the device now (0 when they never left it).
  int64_t reload(int d, int stage, int mb, int64_t at);
  bool offloaded(std::size_t slot) const { return slot_[slot].bytes > 0; }
  int64_t reload_done(std::size_t slot) const { return slot_[slot].back_ns; }
  // Per device: bytes sent to the host over the run, and the most held there at once
  // (at one instant a reload's end comes before an arrival). Writes the host memory series
  // into `timeline` (null: none).
  int64_t sent(int d) const { return sent_[static_cast<std::size_t>(d)]; }
  int64_t host_peak(int d) const;
  void write_host_memory(Timeline* timeline) const;

 private:
  struct Slot {
    int64_t bytes = 0, on_host_ns = -1, back_ns = -1;
    bool released = false;   // its bytes left the device (settle)
    bool cancelled = false;  // reloaded before its bytes left the device
  };
  struct Change {
    int64_t time_ns, bytes;
  };
  std::vector<Change> sorted_changes(int d) const;
  HostLink link_;
  int M_;
  TimelineRecorder* recorder_;
  std::vector<Slot> slot_;
  std::vector<std::deque<std::size_t>> pending_;  // per device: offloaded slots in F order
  std::vector<int64_t> to_host_free_, to_device_free_, sent_;
  std::vector<std::vector<Change>> changes_;  // per device: host bytes +on arrival, -at reload end
};

// What a walk's bookings do to a device's bytes: the simulator's counters, or the
// executor's buffers and host pool.
class StashMoves {
 public:
  virtual ~StashMoves() = default;
  // The offload of `slot`'s `bytes` was booked at F's end; it is on the host at `on_host_ns`.
  virtual void offload(int d, std::size_t slot, int64_t bytes, int64_t on_host_ns) = 0;
  // Those bytes left the device (at the op boundary the walk is at; on the host since `when`).
  virtual void release(int d, std::size_t slot, int64_t bytes, int64_t when) = 0;
  // The reload of `slot` was booked by an op starting at `at` and ends at `back_ns`:
  // `bytes` come back on the device now (0: they never left it).
  virtual void reload(int d, std::size_t slot, int64_t bytes, int64_t at, int64_t back_ns) = 0;
};

// The offload's part of a walk (the rules at the top of this file): the walk calls
// before_op at each op's start (it returns the start, later when the op waits for its
// reload), settle at each op's end and after_forward after an F.
class OffloadWalk {
 public:
  // `slot_bytes`: per (stage, micro-batch) slot, what its F offloads (sim/offload.h's
  // offload_decision); `first_op`: device d's ops are [first_op[d], first_op[d + 1]).
  OffloadWalk(const Schedule& s, const HostLink& link, std::vector<int64_t> slot_bytes,
              const std::vector<std::size_t>& first_op, StashMoves& moves, TimelineRecorder* recorder);
  int64_t before_op(int d, std::size_t flat, int64_t start);
  void settle(int d, int64_t t);
  void after_forward(int d, std::size_t flat, int64_t start, int64_t end);
  // The position's offloaded bytes, host peak (HostTraffic's) and delay.
  void fill(PositionReport& st) const;
  int64_t sent(int d) const { return host_.sent(d); }
  int64_t delay(int d) const { return delay_[static_cast<std::size_t>(d)]; }
  void write_host_memory(Timeline* timeline) const { host_.write_host_memory(timeline); }

 private:
  void start_reload(int d, std::size_t slot, int64_t at);
  const Schedule& s_;
  const int M_;
  std::vector<int64_t> bytes_;  // per slot: what its F offloads
  std::vector<int64_t> need_;   // per op: the slot it needs reloaded (reload_needs), or -1
  const std::vector<std::size_t>& first_op_;
  StashMoves& moves_;
  HostTraffic host_;
  std::vector<int64_t> delay_;  // per device: how long late reloads held up ops
};

}  // namespace pipescope
