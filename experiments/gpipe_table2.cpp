#include "experiments/gpipe_table2.h"

#include <cstdio>
#include <sstream>

#include "core/cost_model.h"
#include "core/error.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"

namespace pipescope {

double SpeedupTable::at(int M, int K) const {
  for (std::size_t m = 0; m < microbatches.size(); ++m) {
    for (std::size_t k = 0; k < stages.size(); ++k) {
      if (microbatches[m] == M && stages[k] == K) return speedup[m][k];
    }
  }
  throw InputError("no entry for M = " + std::to_string(M) + ", K = " + std::to_string(K));
}

SpeedupTable gpipe_table2(const Profile& profile, const std::string& partition, int64_t batch) {
  SpeedupTable t;
  std::vector<std::vector<double>> throughput;
  for (int M : t.microbatches) {
    if (batch % M) throw InputError("batch " + std::to_string(batch) + " is not divisible by M = " + std::to_string(M));
    std::vector<double> row;
    for (int K : t.stages) {
      PlanChoice c;
      c.stages = K;
      c.microbatches = M;
      c.microbatch_size = static_cast<double>(batch / M);
      c.schedule = ScheduleKind::GPipe;
      c.partition = parse_partition_kind(partition);
      const Plan plan = make_plan(profile, c).plan;
      const Hardware ideal = Hardware::ideal(K);
      SimOptions o;
      o.record_timeline = false;
      const StepReport r = simulate(schedule_for(plan), build_cost_model(profile, plan, ideal), ideal, o);
      row.push_back(r.throughput_samples_per_s);
    }
    throughput.push_back(row);
  }
  const double base = throughput[0][0];
  for (const auto& row : throughput) {
    std::vector<double> out;
    for (double v : row) out.push_back(v / base);
    t.speedup.push_back(out);
  }
  return t;
}

std::string speedup_markdown(const SpeedupTable& t, const std::vector<std::vector<double>>& paper) {
  std::ostringstream out;
  out << "| M |";
  for (int K : t.stages) out << " K = " << K << " |";
  out << "\n|---|";
  for (std::size_t k = 0; k < t.stages.size(); ++k) out << "---|";
  out << "\n";
  for (std::size_t m = 0; m < t.microbatches.size(); ++m) {
    out << "| " << t.microbatches[m] << " |";
    for (std::size_t k = 0; k < t.stages.size(); ++k) {
      char cell[64];
      if (paper.empty()) {
        std::snprintf(cell, sizeof cell, " %.2fx |", t.speedup[m][k]);
      } else {
        std::snprintf(cell, sizeof cell, " %.2fx (%gx) |", t.speedup[m][k], paper[m][k]);
      }
      out << cell;
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace pipescope
