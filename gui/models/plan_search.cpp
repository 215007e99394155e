#include "gui/models/plan_search.h"

#include "planner/model_graph.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "gui/models/schedule_names.h"

namespace pipescope::gui {

int64_t plans_batch(const PlanInputs& in) {
  if (!in.profile) throw InputError("no profile loaded");
  const double b = in.choice.microbatch_size > 0 ? in.choice.microbatch_size : in.profile->batch_sizes.front();
  return std::max<int64_t>(1, std::llround(b) * in.choice.microbatches);
}

SearchRequest plans_request(const PlanInputs& in) {
  if (!in.profile) throw InputError("no profile loaded");
  SearchRequest q;
  q.profile = *in.profile;
  q.profile_path = in.choice.profile_path;
  q.devices = in.hardware ? in.hardware->devices : kIdealDevices;
  q.hardware = apply_what_if(in.hardware ? *in.hardware : Hardware::ideal(q.devices), in.what_if);
  if (in.what_if.runtime) q.runtime = *in.what_if.runtime;
  q.batch = plans_batch(in);
  q.schedules = default_search_schedules();  // what `pipescope sweep` searches by default
  q.partition = in.choice.partition;
  q.optimizer_state_factor = in.choice.optimizer_state_factor;
  return q;
}

PlanChoice choice_of(const Candidate& c, int64_t batch, const PlanChoice& base) {
  PlanChoice p = base;
  p.stages = c.stages;
  p.replicas = c.replicas;
  p.microbatches = c.microbatches;
  p.microbatch_size = c.microbatch_size(batch);
  p.schedule = c.schedule;
  p.chunks = c.chunks;
  p.recompute = c.recompute;
  return p;
}

PlanInputs candidate_inputs(const PlanInputs& current, const Candidate& c, int64_t batch) {
  PlanInputs in = current;
  in.choice = choice_of(c, batch, current.choice);
  in.plan = c.plan;
  in.plan->profile = in.choice.profile_path;
  if (!c.layer_order.empty()) {
    in.profile = std::make_shared<const Profile>(reorder_layers(in_topological_order(*current.profile), c.layer_order));
  }
  return in;
}

}  // namespace pipescope::gui
