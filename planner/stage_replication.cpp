// One StageModel per allowed replica count r (built on a hardware view wide enough for
// K x r devices; links and speeds there only guide the partition, the simulation of the
// final plan is exact); a stage s with r_s replicas is costed by model(r_s) at s.
#include "planner/stage_replication.h"

#include <algorithm>
#include <map>
#include <memory>

namespace pipescope {

namespace {

class ReplicaModels {
 public:
  ReplicaModels(const Profile& profile, const Hardware& hardware, const Schedule& schedule, const StageModelSpec& spec)
      : profile_(profile), hardware_(hardware), schedule_(schedule), spec_(spec) {}

  const StageModel& at(int r) {
    auto it = models_.find(r);
    if (it != models_.end()) return *it->second;
    Hardware wide = hardware_;
    wide.devices = std::max(wide.devices, schedule_.positions() * r);
    StageModelSpec spec = spec_;
    spec.replicas = r;
    return *models_.emplace(r, std::make_unique<StageModel>(profile_, wide, schedule_, spec)).first->second;
  }

  int64_t time(int s, int r, int i, int j) {
    const StageModel& m = at(r);
    if (m.constrains_memory() && !m.fits(s, i, j)) return kInfeasible;
    return m.time_ns(s, i, j);
  }

 private:
  const Profile& profile_;
  const Hardware& hardware_;
  const Schedule& schedule_;
  StageModelSpec spec_;
  std::map<int, std::unique_ptr<StageModel>> models_;
};

// Devices to stages for a fixed partition: everyone starts at the smallest allowed count,
// then the slowest stage takes its next allowed count while devices remain.
std::vector<int> allocate(ReplicaModels& models, const LayerRanges& ranges, const std::vector<int>& allowed, int devices) {
  const int K = static_cast<int>(ranges.size());
  std::vector<int> level(static_cast<std::size_t>(K), 0);  // index into allowed
  int used = K * allowed[0];
  if (used > devices) return {};
  for (;;) {
    int slowest = -1;
    int64_t worst = -1;
    for (int s = 0; s < K; ++s) {
      const int64_t t = models.time(s, allowed[level[s]], ranges[s].first, ranges[s].second);
      if (t > worst) {
        worst = t;
        slowest = s;
      }
    }
    const int next = level[slowest] + 1;
    if (next >= static_cast<int>(allowed.size())) break;
    const int extra = allowed[next] - allowed[level[slowest]];
    if (used + extra > devices) break;
    // Only while it helps: a stage whose time does not fall keeps its devices free.
    if (models.time(slowest, allowed[next], ranges[slowest].first, ranges[slowest].second) >= worst) break;
    level[slowest] = next;
    used += extra;
  }
  std::vector<int> out;
  for (int l : level) out.push_back(allowed[l]);
  return out;
}

int64_t bottleneck(ReplicaModels& models, const LayerRanges& ranges, const std::vector<int>& r) {
  int64_t worst = 0;
  for (int s = 0; s < static_cast<int>(ranges.size()); ++s) {
    worst = std::max(worst, models.time(s, r[s], ranges[s].first, ranges[s].second));
  }
  return worst;
}

}  // namespace

StageReplication replicate_per_stage(const Profile& profile, const Hardware& hardware, const Schedule& schedule,
                                     const StageModelSpec& spec, int devices, int64_t samples,
                                     const LayerRanges& start) {
  const int K = schedule.positions();
  ReplicaModels models(profile, hardware, schedule, spec);
  std::vector<int> allowed;
  for (int r = 1; r <= devices - (K - 1); ++r) {
    if (samples % r == 0) allowed.push_back(r);
  }
  StageReplication best;
  best.replicas.assign(static_cast<std::size_t>(K), spec.replicas);
  best.ranges = start;
  best.bottleneck_ns = bottleneck(models, start, best.replicas);
  if (allowed.empty() || schedule.stages() != K) return best;
  LayerRanges ranges = start;
  for (int round = 0; round < 8; ++round) {
    const std::vector<int> r = allocate(models, ranges, allowed, devices);
    if (r.empty()) break;
    auto cost = [&](int s, int i, int j) { return models.time(s, r[s], i, j); };
    auto bound = [&](int s, int i, int j) {
      const StageModel& m = models.at(r[s]);
      if (m.constrains_memory() && m.memory_bound_bytes(s, i, j) > m.memory_limit()) return kInfeasible;
      return m.time_bound_ns(s, i, j);
    };
    const MinMaxResult cut = min_max_partition(profile.num_layers(), K, cost, bound);
    if (cut.ranges.empty() || cut.value >= best.bottleneck_ns) break;
    best = {r, cut.ranges, cut.value};
    ranges = cut.ranges;
  }
  return best;
}

}  // namespace pipescope
