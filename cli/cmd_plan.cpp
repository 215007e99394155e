// `pipescope plan`: search every candidate plan for D devices and a batch of N samples
// and print the best that fit, with the evidence; `pipescope sweep`: the same search,
// writing every candidate (CSV and JSON) with the Pareto front of throughput against
// peak memory marked. Both exit 2 on impossible requests, naming the reason.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/gates.h"
#include "cli/distribution_options.h"
#include "cli/plan_options.h"
#include "core/error.h"
#include "core/report.h"
#include "llm/framework.h"
#include "planner/search.h"

namespace pipescope::cli {
namespace {

struct SearchArgs {
  std::string profile_path, hardware_path;
  int devices = 0;
  int64_t batch = 0;
  std::string schedules = [] {
    std::string out;
    for (ScheduleKind k : default_search_schedules()) out += (out.empty() ? "" : ",") + to_string(k);
    return out;
  }();
  std::string chunks = "2,4";
  int max_stages = 0;
  std::string recompute = "auto";
  std::string partition = "optimal";
  int threads = 0;
  std::string objective = "step";
  bool allow_async = false;
  std::string optimizer_step = "synchronized";
  std::string p2p;
  std::string offload, offload_fraction;
  std::string framework;  // empty: every schedule pipescope has
  DistributionOptions distribution;
};

void add_search_options(CLI::App* cmd, SearchArgs& a) {
  cmd->add_option("--profile", a.profile_path, "Profile file (pipescope.profile)")->required();
  cmd->add_option("--hardware", a.hardware_path,
                  "Hardware file (pipescope.hardware); without it communication is free and memory unbounded");
  cmd->add_option("--devices,-D", a.devices, "Devices D to use (K stages x r replicas = D)")->required();
  cmd->add_option("--batch,-N", a.batch, "Mini-batch size N (samples per step); M runs over its divisors")->required();
  cmd->add_option("--schedules", a.schedules, "Schedules to consider, comma-separated (zb-auto: its order searched per candidate under the largest cap that fits)")->capture_default_str();
  cmd->add_flag("--allow-async", a.allow_async,
                "Also consider the asynchronous schedules " + schedule_kind_names(asynchronous_kind) +
                    " (no flush, stale weights: they change training semantics); ranked by their steady-state step");
  cmd->add_option("--optimizer-step", a.optimizer_step,
                  "synchronized | post-validation (each stage steps after its own last W or B and runs on into the "
                  "next step: candidates ranked by their steady-state step over several steps)")
      ->check(CLI::IsMember({"synchronized", "post-validation"}))
      ->capture_default_str();
  add_p2p_option(cmd, a.p2p);
  add_offload_options(cmd, a.offload, a.offload_fraction);
  cmd->add_option("--framework", a.framework,
                  "megatron | torch | deepspeed: only the schedules that framework runs (llm/framework.h)");
  cmd->add_option("--chunks", a.chunks, "Model chunks per device to try for interleaved")->capture_default_str();
  cmd->add_option("--max-stages", a.max_stages, "Largest pipeline depth K to consider (default: D)");
  cmd->add_option("--recompute", a.recompute, "Re-materialisation: auto (try both) | on | off")->capture_default_str();
  cmd->add_option("--partition", a.partition, "uniform | gpipe | optimal (balanced = optimal)")->capture_default_str();
  cmd->add_option("--threads", a.threads, "Worker threads (default: one per core); results do not depend on it");
  cmd->add_option("--objective", a.objective,
                  "Rank by the deterministic step, or by the mean, p50 or p99 step under --jitter/--straggler/"
                  "--link-jitter (docs/step-distributions.md)")
      ->capture_default_str();
  a.distribution.add_to(cmd, /*for_search=*/true);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// --framework keeps the schedules the framework runs; one named in --schedules that it
// does not run is refused.
void restrict_to_framework(const SearchArgs& a, std::vector<ScheduleKind>& schedules) {
  const std::optional<Framework> framework = framework_from_name(a.framework);
  if (!framework) throw InputError("--framework: expected megatron, torch or deepspeed, got \"" + a.framework + "\"");
  const FrameworkOffer& offer = framework_offer(*framework);
  const bool explicit_list = a.schedules != SearchArgs{}.schedules;
  std::vector<ScheduleKind> kept;
  for (ScheduleKind kind : schedules) {
    if (offer.runs(kind)) {
      kept.push_back(kind);
    } else if (explicit_list) {
      throw InputError("--schedules: " + to_string(kind) + " is not a schedule " + offer.name + " runs (it runs " +
                       [&] {
                         std::string names;
                         for (ScheduleKind k : offer.schedules) names += (names.empty() ? "" : ", ") + to_string(k);
                         return names;
                       }() + ")");
    }
  }
  schedules = kept;
}

SearchRequest make_request(const SearchArgs& a) {
  SearchRequest q;
  q.profile = load_profile(a.profile_path);
  q.profile_path = a.profile_path;
  q.devices = a.devices;
  if (q.devices < 1) throw InputError("--devices: expected at least 1, got " + std::to_string(a.devices));
  q.hardware = a.hardware_path.empty() ? Hardware::ideal(a.devices) : load_hardware(a.hardware_path);
  q.batch = a.batch;
  q.schedules.clear();
  for (const std::string& s : split(a.schedules)) {
    const ScheduleKind kind = parse_schedule_kind(s);
    if (is_asynchronous(kind) && !a.allow_async) {
      throw InputError("--schedules: " + s + " is asynchronous (no flush; backward passes use stale weights): "
                       "add --allow-async to consider it");
    }
    q.schedules.push_back(kind);
  }
  for (ScheduleKind kind : schedule_kinds()) {
    if (a.allow_async && is_asynchronous(kind) && std::find(q.schedules.begin(), q.schedules.end(), kind) == q.schedules.end()) {
      q.schedules.push_back(kind);
    }
  }
  if (!a.framework.empty()) restrict_to_framework(a, q.schedules);
  q.interleaved_chunks.clear();
  for (const std::string& s : split(a.chunks)) {
    try {
      std::size_t used = 0;
      int v = std::stoi(s, &used);
      if (used != s.size() || v < 2 || v > 64) throw std::invalid_argument(s);
      q.interleaved_chunks.push_back(v);
    } catch (const std::exception&) {
      throw InputError("--chunks: expected whole numbers from 2 to 64 separated by commas, got \"" + a.chunks + "\"");
    }
  }
  q.max_stages = a.max_stages;
  q.optimizer_step = parse_optimizer_step(a.optimizer_step);
  if (!a.p2p.empty()) q.p2p = parse_p2p(a.p2p);
  q.offload = offload_with_flags({}, a.offload, a.offload_fraction);
  if (q.offload.fraction.size() > 1) {
    throw InputError("--offload-fraction: the search tries several stage counts; give one fraction for every stage");
  }
  check_offload(q.offload, 1, q.hardware, "--offload", "--offload-fraction");
  // Without --offload a candidate that does not fit tries selective, then all offload (when
  // the hardware file has a host_link); --offload none keeps every plan's stash on the device.
  q.consider_offload = a.offload.empty();
  q.recompute = parse_recompute_mode(a.recompute);
  q.partition = parse_partition_kind(a.partition);
  q.threads = a.threads;
  if (a.threads < 0) throw InputError("--threads: expected at least 1, got " + std::to_string(a.threads));
  q.objective = parse_objective(a.objective);
  q.jitter = a.distribution.spec();
  if (!a.distribution.enabled()) q.jitter.samples = 500;
  const bool jittered = a.distribution.enabled() || a.distribution.jitter != "0" || !a.distribution.straggler.empty() ||
                        a.distribution.link_jitter != 0;
  if (jittered && q.objective == Objective::Step) {
    throw InputError("--samples, --jitter, --straggler and --link-jitter rank plans only with --objective mean|p50|p99");
  }
  q.jitter_from_profile = a.distribution.from_profile();
  return q;
}

// A progress bar on stderr, only when stderr is a terminal.
ProgressFn progress_bar() {
  if (!isatty(STDERR_FILENO)) return {};
  return [](std::size_t done, std::size_t total) {
    const int width = 40;
    const int filled = total ? static_cast<int>(width * done / total) : width;
    std::fprintf(stderr, "\rsimulating [%s%s] %zu/%zu", std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\r%*s\r", width + 40, "");
    std::fflush(stderr);
  };
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

std::string top_table(const SearchResult& r, int top) {
  std::ostringstream out;
  out << std::left << std::setw(5) << "rank" << std::setw(34) << "plan" << std::right << std::setw(12) << "step ms"
      << std::setw(14) << "samples/s" << std::setw(9) << "bubble" << std::setw(13) << "peak GiB" << "\n";
  for (int k = 0; k < top && k < static_cast<int>(r.ranking.size()); ++k) {
    const Candidate& c = r.candidates[r.ranking[k]];
    char row[160];
    std::snprintf(row, sizeof row, "%-5d%-34s%12s%14.1f%8.1f%%%13s\n", k + 1, c.label().c_str(),
                  format_ms(c.step_ns).c_str(), c.throughput_samples_per_s, 100.0 * c.bubble_fraction,
                  gib(c.peak_bytes).c_str());
    out << row << "     peak GiB per stage:";
    for (int64_t b : c.stage_peak_bytes) out << ' ' << gib(b);
    out << "\n";
  }
  return out.str();
}

std::string relative_profile(const std::string& profile, const std::string& plan_file) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::absolute(plan_file).parent_path();
  return fs::absolute(profile).lexically_normal().lexically_relative(folder.lexically_normal()).string();
}

// The winner's step, for the gates.
StepFacts winner_facts(const Candidate& c, const SearchResult& r, const std::string& model) {
  StepFacts f;
  f.title = model + ", " + c.label();
  f.model = model;
  f.step_ms = static_cast<double>(c.step_ns) / 1e6;
  f.throughput_samples_per_s = c.throughput_samples_per_s;
  f.bubble_fraction = c.bubble_fraction;
  f.stage_peak_bytes = c.stage_peak_bytes;
  f.memory_limit_bytes = r.memory_limit_bytes;
  return f;
}

// plan.json -> plan.profile.json: where a reordered profile goes.
std::string reordered_profile_path(const std::string& plan_file) {
  std::filesystem::path p(plan_file);
  p.replace_extension(".profile.json");
  return p.string();
}

}  // namespace

void add_plan_command(CLI::App& app) {
  struct Args {
    SearchArgs search;
    int top = 5;
    bool json = false;
    std::string output;
    GateOptions gates;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("plan", "Search stages, micro-batches, schedule, re-materialisation and "
                                             "replication for the fastest plan that fits in memory");
  add_search_options(cmd, a->search);
  cmd->add_option("--top", a->top, "How many of the best plans to print")->capture_default_str();
  cmd->add_flag("--json", a->json, "Print one JSON object instead of the table");
  cmd->add_option("-o,--output", a->output, "Write the winner as a plan file (for simulate --plan)");
  a->gates.add_step_gates(cmd);
  cmd->callback([a] {
    if (a->top < 1) throw InputError("--top: expected at least 1, got " + std::to_string(a->top));
    a->gates.check(a->json, !a->search.hardware_path.empty(), {{"--output", a->output}});
    SearchRequest q = make_request(a->search);
    // zb-auto orders searched only where they can rank that high (bounds on a step from
    // time 0: under post-validation every order is searched).
    q.exact_top = q.optimizer_step == OptimizerStep::PostValidation ? 0 : std::max(10, a->top);
    SearchResult r = search_plans(q, progress_bar());
    const Candidate& best = winner(r);  // throws (exit 2) when nothing fits
    const std::vector<std::string> why = explain_winner(r);
    const StepFacts facts = winner_facts(best, r, q.profile.model);
    const std::vector<GateResult> gates = a->gates.evaluate(facts);
    std::vector<std::pair<std::string, std::string>> files = a->gates.junit_file("plan", gates);
    if (!a->output.empty()) {
      Plan plan = best.plan;
      plan.profile = relative_profile(q.profile_path, a->output);
      if (!best.layer_order.empty()) {
        // The downset partition's stages are contiguous in another layer order: the
        // profile in that order goes beside the plan (docs/planner.md), in the same
        // all-or-nothing write as the plan.
        const std::string reordered = reordered_profile_path(a->output);
        files.emplace_back(reordered, profile_to_json(reordered_profile(q, best)).dump(1) + "\n");
        plan.profile = relative_profile(reordered, a->output);
      }
      files.emplace_back(a->output, plan_to_json(plan).dump(2) + "\n");
    }
    write_outputs(files);
    std::string json;
    if (a->json) {
      Json top = Json::array();
      for (int k = 0; k < a->top && k < static_cast<int>(r.ranking.size()); ++k) {
        top.push_back(candidate_to_json(r.candidates[r.ranking[k]], q.batch));
      }
      Json out = {{"format", "pipescope.plan_search"}, {"version", 1},
                  {"candidates", r.candidates.size()}, {"fitting", r.ranking.size()},
                  {"memory_limit_bytes", r.memory_limit_bytes}, {"top", top},
                  {"why", why}, {"plan", plan_to_json(best.plan)}};
      json = with_gates(std::move(out), gates).dump(2) + "\n";
    }
    std::string table = top_table(r, a->top) + "\nWhy " + best.label() + ":\n";
    for (const std::string& line : why) table += "  - " + line + "\n";
    std::cout << result_text(a->gates, a->json, json, table, step_markdown("plan", facts), gates);
    enforce(gates);
  });
}

void add_sweep_command(CLI::App& app) {
  struct Args {
    SearchArgs search;
    std::string prefix = "sweep";
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("sweep", "Simulate every candidate plan; write them all (PREFIX.csv, PREFIX.json) "
                                              "with the Pareto front of throughput against peak memory marked");
  add_search_options(cmd, a->search);
  cmd->add_option("-o,--output", a->prefix, "Output prefix: writes PREFIX.csv and PREFIX.json")->capture_default_str();
  cmd->callback([a] {
    SearchRequest q = make_request(a->search);
    SearchResult r = search_plans(q, progress_bar());
    // Both files or neither.
    write_outputs({{a->prefix + ".csv", candidates_csv(r, q.batch)}, {a->prefix + ".json", search_to_json(r, q).dump(1) + "\n"}});
    int front = 0;
    for (const Candidate& c : r.candidates) front += c.pareto ? 1 : 0;
    std::cout << r.candidates.size() << " candidates, " << r.ranking.size() << " fit, " << front
              << " on the Pareto front; wrote " << a->prefix << ".csv and " << a->prefix << ".json\n";
    std::cout << "Pareto front (peak memory ascending):\n";
    std::vector<const Candidate*> pareto;
    for (const Candidate& c : r.candidates) {
      if (c.pareto) pareto.push_back(&c);
    }
    std::sort(pareto.begin(), pareto.end(), [](auto x, auto y) { return x->peak_bytes < y->peak_bytes; });
    for (const Candidate* c : pareto) {
      char row[160];
      std::snprintf(row, sizeof row, "  %-34s %10s GiB %12.1f samples/s\n", c->label().c_str(), gib(c->peak_bytes).c_str(),
                    c->throughput_samples_per_s);
      std::cout << row;
    }
    if (r.ranking.empty()) winner(r);  // nothing fits: exit 2 with the smallest memory needed
  });
}

}  // namespace pipescope::cli
