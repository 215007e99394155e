// The frontier table (see frontier_table.h). Each row: the candidate evaluation's cut for
// (schedule, offload) at the setting's shape, then one simulation of that plan, whose
// step and per-position peaks (device and host) the row reports.
#include "experiments/frontier_table.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/cost_model.h"
#include "core/error.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/report.h"
#include "planner/candidate_evaluation.h"
#include "planner/model_graph.h"
#include "sim/simulator.h"

namespace pipescope {

namespace {

// Any number of chunks per position (core/schedule_kinds.h): the setting's v.
bool looped(ScheduleKind kind) { return schedule_kind(kind).chunks == ChunkRule::Looped; }

FrontierRow evaluate(const SearchRequest& q, const Profile& listed, const FrontierSetting& setting, ScheduleKind kind,
                     OffloadPolicy policy) {
  Candidate c;
  c.stages = setting.stages;
  c.replicas = 1;
  c.microbatches = setting.microbatches;
  c.schedule = kind;
  c.chunks = looped(kind) ? setting.chunks : required_chunks(kind);
  FrontierRow row;
  row.schedule = to_string(kind) + (looped(kind) ? " v=" + std::to_string(c.chunks) : std::string());
  row.offload = policy;
  try {
    evaluate_candidate(q, listed, nullptr, c);
    const Profile profile = c.layer_order.empty() ? listed : reorder_layers(listed, c.layer_order);
    SimOptions o;
    o.record_timeline = false;
    o.p2p = p2p_of(c.plan, q.hardware);
    o.offload = c.plan.offload;
    const StepReport r = simulate(schedule_for(c.plan), build_cost_model(profile, c.plan, q.hardware), q.hardware, o);
    row.step_ns = r.step_ns;
    row.bubble = r.bubble_fraction;
    for (const PositionReport& st : r.positions) {
      row.stage_peak_bytes.push_back(st.peak_memory_bytes);
      row.host_peak_bytes = std::max(row.host_peak_bytes, st.host_peak_bytes);
      row.offloaded_bytes += st.offloaded_bytes;
    }
    row.max_peak_bytes = r.peak_memory_bytes();
    row.fits = r.fits();
    row.plan = c.plan;
  } catch (const InputError& e) {
    row.refused = e.what();
  }
  return row;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / (int64_t{1} << 30));
  return buf;
}

}  // namespace

void mark_frontier(std::vector<FrontierRow>& rows) {
  for (FrontierRow& a : rows) {
    a.frontier = false;
    if (!a.refused.empty()) continue;
    a.frontier = std::none_of(rows.begin(), rows.end(), [&](const FrontierRow& b) {
      return b.refused.empty() && b.step_ns <= a.step_ns && b.max_peak_bytes <= a.max_peak_bytes &&
             (b.step_ns < a.step_ns || b.max_peak_bytes < a.max_peak_bytes);
    });
  }
}

std::vector<FrontierRow> frontier_table(const FrontierSetting& setting) {
  SearchRequest q;
  q.profile = load_profile(setting.profile_path);
  q.profile_path = setting.profile_path;
  q.hardware = load_hardware(setting.hardware_path);
  if (setting.host_link) q.hardware.host_link = setting.host_link;
  q.devices = setting.stages;
  q.batch = setting.batch;
  q.recomputes = {Recompute::None};
  q.consider_offload = false;  // each row names its offload
  q.threads = 1;
  if (!q.hardware.host_link) {
    throw InputError(setting.hardware_path, "host_link", "the frontier table offloads; the hardware file has no host link");
  }
  const Profile listed = in_topological_order(q.profile);
  std::vector<FrontierRow> rows;
  for (ScheduleKind kind : setting.schedules) {
    for (OffloadPolicy policy : {OffloadPolicy::None, OffloadPolicy::Selective, OffloadPolicy::All}) {
      q.offload = Offload{policy, {}};
      rows.push_back(evaluate(q, listed, setting, kind, policy));
    }
  }
  mark_frontier(rows);
  return rows;
}

std::string frontier_markdown(const FrontierSetting& s, const std::vector<FrontierRow>& rows) {
  std::ostringstream md;
  md << s.profile_path << " on " << s.hardware_path;
  if (s.host_link) md << " with " << s.host_link_name;
  md << ": K = " << s.stages << " (one device each), batch " << s.batch
     << ", M = " << s.microbatches << ", no re-materialisation; GiB = 2^30 bytes; * = on the frontier (no other row "
     << "is both as fast and as lean)\n\n";
  md << "| schedule | offload | step (ms) | bubble | peak per stage (GiB) | max peak (GiB) | host peak (GiB) | fits | frontier |\n";
  md << "|---|---|---:|---:|---|---:|---:|---|---|\n";
  for (const FrontierRow& r : rows) {
    md << "| " << r.schedule << " | " << to_string(r.offload) << " | ";
    if (!r.refused.empty()) {
      md << "refused: " << r.refused << " | | | | | | |\n";
      continue;
    }
    char step[32], bubble[32];
    std::snprintf(step, sizeof step, "%.1f", static_cast<double>(r.step_ns) / 1e6);
    std::snprintf(bubble, sizeof bubble, "%.1f%%", 100.0 * r.bubble);
    md << step << " | " << bubble << " | ";
    for (std::size_t p = 0; p < r.stage_peak_bytes.size(); ++p) md << (p ? " " : "") << gib(r.stage_peak_bytes[p]);
    md << " | " << gib(r.max_peak_bytes) << " | " << gib(r.host_peak_bytes) << " | " << (r.fits ? "yes" : "no") << " | "
       << (r.frontier ? "*" : "") << " |\n";
  }
  return md.str();
}

}  // namespace pipescope
