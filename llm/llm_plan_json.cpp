// pipescope.llm_plan v1, field for field (llm/llm_plan_json.h); a candidate llm/job.h
// evaluated also carries its step in ns ("step_ns") and each rank's bytes by kind ("ranks"). Steps are written in
// milliseconds as doubles (step_ns / 1e6) and read back rounded to the nanosecond,
// exact below 2^53 / 1e6 ms; the reader also holds the facts the search guarantees
// (every layout spans the GPUs and the global batch, is one its framework runs
// (framework_refusal), fits, is bounded below by its bound, and best is fastest first), so a
// hand-edited file cannot show an impossible layout.
#include "llm/llm_plan_json.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "llm/framework.h"
#include "llm/job.h"
#include "llm/pipeline_schedule.h"
#include "llm/plan_layout.h"

namespace pipescope {

namespace {

// About 11.6 days: far inside int64 nanoseconds (9.2e18), and inside the schema's 1e15.
constexpr double kMaxMs = 1e12;

std::string num(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

// `usable`: the bytes per GPU it was searched against (capacity less headroom).
Json candidate_json(const LlmCandidate& c, double usable) {
  Json out = {{"layout", layout_to_json(c.layout)}, {"step_ms", c.step_ns / 1e6}, {"bound_ms", c.bound_ns / 1e6},
          {"pipeline_ms", c.pipeline_ns / 1e6}, {"dp_exposed_ms", c.dp_exposed_ns / 1e6},
          {"sharding_ms", c.sharding_ns / 1e6}, {"bubble_fraction", c.bubble}, {"mfu", c.mfu},
          {"peak_bytes", json_number(c.peak_bytes)}, {"schedule", c.schedule}, {"padded_vocabulary", c.vocabulary}};
  if (!c.ranks.empty()) {  // evaluated by llm/job.h (files before it have neither key, and keep none)
    out["step_ns"] = c.step_ns;
    out["ranks"] = Json::array();
    for (const RankMemory& m : c.ranks) out["ranks"].push_back(rank_memory_to_json(m));
    // the rank that binds memory first, and what it leaves of the usable bytes
    const int k = binding_rank(c.ranks);
    out["binding_rank"] = k;
    out["margin_bytes"] = json_number(usable - c.ranks[static_cast<std::size_t>(k)].total());
  }
  return out;
}

int64_t read_ns(const JsonReader& r) { return std::llround(r.as_double(0, kMaxMs) * 1e6); }

LlmCandidate read_candidate(const JsonReader& r, const LlmPlanFile& f) {
  LlmCandidate c;
  const JsonReader layout = r["layout"];
  c.layout = layout_from_json(layout);
  if (c.layout.gpus() != f.gpus) {
    layout.fail("t x cp x d x p = " + std::to_string(c.layout.gpus()) + ", expected gpus = " + std::to_string(f.gpus));
  }
  if (c.layout.global_batch() != f.global_batch) {
    layout.fail("micro_batch x microbatches x d = " + std::to_string(c.layout.global_batch()) +
                ", expected global_batch = " + std::to_string(f.global_batch));
  }
  // a layout the file's framework runs: what validate_job refuses without the model (the
  // file states the model's name only), naming the layout's field
  if (const std::string why = framework_refusal(framework_offer(f.framework), c.layout); !why.empty()) {
    const std::string field = plan_field_of_check(why, "");
    throw InputError(r.source(), r.path() + "." + (field.empty() ? "layout" : field), why);
  }
  c.step_ns = read_ns(r["step_ms"]);
  if (r.has("step_ns")) {  // files before it carry step_ms only
    const int64_t ns = r["step_ns"].as_int(0, static_cast<int64_t>(kMaxMs * 1e6));
    if (ns != c.step_ns) {
      r["step_ns"].fail("expected step_ms x 1e6 = " + std::to_string(c.step_ns) + ", got " + std::to_string(ns));
    }
  }
  if (r.has("ranks")) {
    for (const JsonReader& m : r["ranks"].items()) {
      RankMemory rank;
      rank.rank = static_cast<int>(m["rank"].as_int(0, c.layout.p - 1));
      rank.parameter_bytes = m["parameter_bytes"].as_double(0);
      rank.gradient_bytes = m["gradient_bytes"].as_double(0);
      rank.optimizer_bytes = m["optimizer_bytes"].as_double(0);
      rank.activation_bytes = m["activation_bytes"].as_double(0);
      c.ranks.push_back(rank);
    }
  }
  c.bound_ns = read_ns(r["bound_ms"]);
  if (c.bound_ns > c.step_ns) r["bound_ms"].fail("expected at most step_ms (a lower bound on it)");
  c.pipeline_ns = read_ns(r["pipeline_ms"]);
  c.dp_exposed_ns = read_ns(r["dp_exposed_ms"]);
  c.sharding_ns = read_ns(r["sharding_ms"]);
  c.bubble = r["bubble_fraction"].as_double(-1, 1);
  c.mfu = r["mfu"].as_double(0, 1);
  c.peak_bytes = r["peak_bytes"].as_double(0);
  if (c.peak_bytes > f.result.usable()) {
    r["peak_bytes"].fail("expected at most capacity_bytes - headroom_bytes = " + num(f.result.usable()) +
                         " (a layout that fits), got " + num(c.peak_bytes));
  }
  c.schedule = r["schedule"].as_string();
  const std::string schedule = to_string(layout_schedule(c.layout));
  if (c.schedule != schedule) {
    r["schedule"].fail("expected \"" + schedule + "\", the layout's (layout.schedule, else 1f1b or interleaved by v), got \"" +
                       c.schedule + "\"");
  }
  c.vocabulary = static_cast<int>(r["padded_vocabulary"].as_int(1, INT_MAX));
  return c;
}

std::vector<std::string> read_strings(const JsonReader& r) {
  std::vector<std::string> out;
  for (const JsonReader& s : r.items()) out.push_back(s.as_string());
  return out;
}

}  // namespace

Json llm_plan_result_to_json(const LlmPlanFile& f) {
  const LlmSearchResult& r = f.result;
  Json best = Json::array();
  for (const LlmCandidate& c : r.best) best.push_back(candidate_json(c, r.usable()));
  Json out = {{"format", "pipescope.llm_plan"}, {"version", 1}, {"model", f.model}, {"gpu", f.gpu},
              {"gpus", f.gpus}, {"global_batch", f.global_batch}, {"framework", to_string(f.framework)},
              {"capacity_bytes", json_number(r.capacity)},
              {"search", {{"factorizations", r.factorizations}, {"enumerated", r.enumerated}, {"valid", r.valid},
                          {"fitting", r.fitting}, {"simulated", r.simulated}}},
              {"best", best}, {"why", r.why}, {"runner_ups", r.lost}};
  if (r.headroom > 0) out["headroom_bytes"] = json_number(r.headroom);  // absent: none kept free
  return out;
}

LlmPlanFile llm_plan_result_from_json(const JsonReader& r) {
  r.expect_format("pipescope.llm_plan", 1);
  LlmPlanFile f;
  f.model = r["model"].as_string();
  f.gpu = r["gpu"].as_string();
  f.gpus = static_cast<int>(r["gpus"].as_int(1, INT_MAX));
  f.global_batch = static_cast<int>(r["global_batch"].as_int(1, INT_MAX));
  const std::string framework = r["framework"].as_string();
  const std::optional<Framework> known = framework_from_name(framework);
  if (!known) r["framework"].fail("expected megatron, torch or deepspeed, got \"" + framework + "\"");
  f.framework = *known;
  LlmSearchResult& s = f.result;
  s.capacity = r["capacity_bytes"].as_double(0);
  // absent (files before it): nothing was kept free
  if (r.has("headroom_bytes")) s.headroom = r["headroom_bytes"].as_double(0, s.capacity);
  const JsonReader search = r["search"];
  s.factorizations = search["factorizations"].as_int(0);
  s.enumerated = search["enumerated"].as_int(0);
  s.valid = search["valid"].as_int(0, s.enumerated);
  s.fitting = search["fitting"].as_int(0, s.valid);
  s.simulated = search["simulated"].as_int(0, s.fitting);
  const JsonReader best = r["best"];
  for (const JsonReader& c : best.items()) {
    s.best.push_back(read_candidate(c, f));
    if (s.best.size() > 1 && s.best.back().step_ns < s.best[s.best.size() - 2].step_ns) {
      c["step_ms"].fail("expected at least the step before it (best is fastest first)");
    }
  }
  if (s.best.empty()) best.fail("expected at least one layout (llm-plan writes the best first)");
  if (static_cast<int64_t>(s.best.size()) > s.simulated) {
    search["simulated"].fail("expected at least the " + std::to_string(s.best.size()) + " layouts in best, got " +
                             std::to_string(s.simulated));
  }
  s.why = read_strings(r["why"]);
  const JsonReader lost = r["runner_ups"];
  s.lost = read_strings(lost);
  if (s.lost.size() != s.best.size() - 1) {
    lost.fail("expected one line per runner-up, " + std::to_string(s.best.size() - 1) + ", got " +
              std::to_string(s.lost.size()));
  }
  return f;
}

LlmPlanFile read_llm_plan_result(const std::string& path) {
  return llm_plan_result_from_json(JsonReader::from_file(path));
}

}  // namespace pipescope
