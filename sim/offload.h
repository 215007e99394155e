// Activation offload in the simulator (core/offload.h; PipeOffload, Wan et al. 2025).
// Each device has two host tracks, one per direction, each carrying one transfer at a
// time in the order booked; neither meets the pipeline's p2p links.
//   offload  when F(s,m) ends, `fraction` of its stash goes to the host: it starts at
//            max(F's end, the to-host track free) and is on the host latency after the
//            track is done. The bytes leave the device at the first op boundary (an op's
//            start or end on the device) at or after that: an offload that finishes
//            during an op still counts for that op's peak.
//   reload   the op that needs the stash back (the first op of (s,m) after F: R, B or I)
//            has its reload started by the op before it on the device: at max(that op's
//            start, the offload on the host, the to-device track free). The reloaded bytes
//            count on the device from that op's start; the op that needs them starts no
//            earlier than the reload's end (a late reload delays it: offload_delay_ns).
//   selective (choose_offloads): per device, greedily in F order, a stash is offloaded
//            when, with it and the stashes already chosen queued on both tracks as above,
//            every chosen reload still ends by its op's start in the run without offload.
//            Then nothing is delayed, so the step time is exactly the one without offload.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "core/offload.h"
#include "core/report.h"
#include "core/schedule.h"

namespace pipescope {

// Per flat op of `s` (op_offset order): the (stage, micro-batch) slot, stage * M + mb,
// whose stash the op needs back after its F (the first op of that slot after F), or -1.
std::vector<int64_t> reload_needs(const Schedule& s);

// The bytes each (stage, micro-batch) slot offloads under policy All: the fraction of
// its stash (core/op_rules.h's stash_bytes).
std::vector<int64_t> offload_all_bytes(const Schedule& s, const CostModel& c, const Offload& offload);

// Selective: of `all` (offload_all_bytes), the slots whose offload delays nothing, given
// each op's start and end in the run without offload (flat op order); the others get 0.
std::vector<int64_t> choose_offloads(const Schedule& s, const HostLink& link, std::span<const int64_t> all,
                                     std::span<const int64_t> op_starts, std::span<const int64_t> op_ends);

// The prediction's note on what offload charged (the rules above, in one sentence).
std::string offload_note(const Offload& offload);

// The host tracks of every device and what each holds on the host. The simulator books
// offloads and reloads in its walk (a device's bookings come in its op order).
//   HostTraffic h(link, K, S * M, M, &recorder);  h.offload(d, s, m, bytes, f_end); ...
class HostTraffic {
 public:
  HostTraffic(const HostLink& link, int devices, std::size_t slots, int microbatches, TimelineRecorder* recorder);
  // F(stage, mb) on device d ended at `at`: `bytes` of its stash go to the host.
  void offload(int d, int stage, int mb, int64_t bytes, int64_t at);
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
  // Per device: bytes sent to the host over the run, and the most held there at once. Writes
  // the host memory series into `timeline` (null: none).
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

// The simulator's device byte counters the offload moves (its own vectors, by reference):
// per (stage, micro-batch) slot the stash and everything held; per device the stash, its
// peak, everything above static bytes and the kept weight versions (for memory samples).
struct DeviceBytes {
  std::vector<int64_t>& held;
  std::vector<int64_t>& held_total;
  std::vector<int64_t>& current_act;
  std::vector<int64_t>& peak_act;
  std::vector<int64_t>& current_total;
  const std::vector<int64_t>& version_bytes;
};

// The offload's part of the simulator's walk (the rules at the top of this file): the
// walk calls before_op at each op's start (it returns the start, later when the op waits
// for its reload), settle at each op's end and after_forward after an F.
class OffloadWalk {
 public:
  OffloadWalk(const Schedule& s, const HostLink& link, std::vector<int64_t> offload_bytes,
              const std::vector<std::size_t>& first_op, DeviceBytes bytes, TimelineRecorder* recorder);
  int64_t before_op(int d, std::size_t flat, int64_t start);
  void settle(int d, int64_t t);
  void after_forward(int d, std::size_t flat, int64_t start, int64_t end);
  // The position's offloaded bytes, host peak and delay.
  void fill(PositionReport& st) const;
  void write_host_memory(Timeline* timeline) const { host_.write_host_memory(timeline); }

 private:
  void start_reload(int d, std::size_t slot, int64_t at);
  const Schedule& s_;
  const int M_;
  std::vector<int64_t> bytes_;  // per slot: what its F offloads
  std::vector<int64_t> need_;   // per op: the slot it needs reloaded (reload_needs), or -1
  const std::vector<std::size_t>& first_op_;
  DeviceBytes b_;
  TimelineRecorder* recorder_;
  HostTraffic host_;
  std::vector<int64_t> delay_;  // per device: how long late reloads held up ops
};

}  // namespace pipescope
