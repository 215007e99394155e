// The memory-bubble frontier: for one profile on one hardware file, every schedule that
// takes the shape (K stages on K devices, M micro-batches) with activation offload none,
// selective and all (core/offload.h), its step and each position's peak memory, and the
// Pareto frontier of step against the largest peak. Each row is the plan the planner's
// candidate evaluation cuts for that schedule and offload (planner/candidate_evaluation.h),
// simulated as `pipescope simulate --plan` would. Used by the frontier_table program
// (docs/memory.md) and the GUI plans view's frontier (gui/models/plans_model.h).
//   FrontierSetting s{"profiles/gpt-13b-h200.json", "profiles/gpus/h200.json"};
//   std::vector<FrontierRow> rows = frontier_table(s);   // frontier marked
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/offload.h"
#include "core/plan.h"
#include "core/schedule.h"

namespace pipescope {

struct FrontierSetting {
  std::string profile_path, hardware_path;
  int stages = 8;           // K, one device each
  int64_t batch = 64;       // samples per step
  int microbatches = 32;    // M
  std::vector<ScheduleKind> schedules = {
      ScheduleKind::GPipe,         ScheduleKind::OneFOneB,     ScheduleKind::Interleaved,
      ScheduleKind::ZeroBubbleH1,  ScheduleKind::ZeroBubbleH2, ScheduleKind::ZeroBubbleV,
      ScheduleKind::VMin,          ScheduleKind::VHalf,        ScheduleKind::VZeroBubble,
      ScheduleKind::LoopedBFS,     ScheduleKind::InterleavedZeroBubble, ScheduleKind::DualPipeV};
  int chunks = 2;           // v of the looped schedules (interleaved, looped-bfs, interleaved-zb)
  // Replaces the hardware file's host_link (a what-if: a GH200-style NVLink-C2C host link
  // on the same GPU); absent: the file's.
  std::optional<HostLink> host_link;
  std::string host_link_name;  // said in the table's heading when host_link is set
};

struct FrontierRow {
  std::string schedule;                   // "1f1b", "interleaved v=2"
  OffloadPolicy offload = OffloadPolicy::None;
  int64_t step_ns = 0;
  double bubble = 0;
  std::vector<int64_t> stage_peak_bytes;  // per position, device memory
  int64_t max_peak_bytes = 0;
  int64_t host_peak_bytes = 0;            // the most any position holds on the host
  int64_t offloaded_bytes = 0;            // sent to the host over the step, all positions
  bool fits = false;                      // every position within the device memory
  bool frontier = false;                  // no other row is as fast and as lean, and better in one
  std::string refused;                    // why the schedule does not take the shape (other fields empty)
  Plan plan;                              // the evaluated plan (its cut, schedule and offload)
};

// Every schedule x {none, selective, all}, in that order, frontier marked. Throws InputError
// on an unreadable file or a hardware file without a host_link.
std::vector<FrontierRow> frontier_table(const FrontierSetting& setting);
// Marks the rows (not refused) on the Pareto frontier of (step_ns, max_peak_bytes): a row
// is on it when no other row has step and peak each at most its own and one of them less.
void mark_frontier(std::vector<FrontierRow>& rows);
std::string frontier_markdown(const FrontierSetting& setting, const std::vector<FrontierRow>& rows);

}  // namespace pipescope
