// `pipescope plan`: the one search. With --profile it searches every candidate plan for
// D devices and a batch of N samples (planner/search.h) and prints the best that fit, with
// the evidence; with a model (--hf-config or Megatron's model flags) and --gpu it runs the
// LLM layout search (cli/model_plan.h, llm/layout_search.h), as its old name `llm-plan`
// does. One form per run: a flag of the other form exits 2 naming it, and where both forms
// hold a concept Megatron's name says it in both (--gpus = --devices, --global-batch-size
// = --batch, --pipeline-model-parallel-size pins K). `pipescope sweep`: the profile
// search, writing every candidate (CSV and JSON) with the Pareto front of throughput
// against peak memory marked. All exit 2 on impossible requests, naming the reason.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/gates.h"
#include "cli/distribution_options.h"
#include "cli/model_plan.h"
#include "cli/plan_options.h"
#include "core/error.h"
#include "core/report.h"
#include "interop/hf_profile.h"
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
  int stages = 0;  // --pipeline-model-parallel-size: K pinned (0: searched)
  std::string recompute = "auto";
  std::string partition = "optimal";
  int threads = 0;
  std::string objective = "step";
  bool allow_async = false;
  std::string optimizer_step = "synchronized";
  std::string p2p;
  std::string runtime;  // --runtime
  std::string offload, offload_fraction;
  std::string framework;  // empty: every schedule pipescope has
  DistributionOptions distribution;
};

// `sweep` has only this form; `plan` checks --profile, --devices and --batch itself (see
// model_form and run_profile_plan) and declares --framework among the flags its two forms share.
void add_search_options(CLI::App* cmd, SearchArgs& a, bool sweep) {
  CLI::Option* profile = cmd->add_option("--profile", a.profile_path, "Profile file (pipescope.profile)");
  cmd->add_option("--hardware", a.hardware_path,
                  "Hardware file (pipescope.hardware); without it communication is free and memory unbounded");
  CLI::Option* devices = cmd->add_option("--devices,-D", a.devices, "Devices D to use (K stages x r replicas = D)");
  CLI::Option* batch = cmd->add_option("--batch,-N", a.batch, "Mini-batch size N (samples per step, 1 to 2^30); M runs over its divisors up to " +
                                                     std::to_string(kMaxSearchMicrobatches));
  if (sweep) {
    profile->required();
    devices->required();
    batch->required();
  }
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
  add_runtime_option(cmd, a.runtime);
  add_offload_options(cmd, a.offload, a.offload_fraction);
  if (sweep) {
    cmd->add_option("--framework", a.framework,
                    "megatron | torch | deepspeed: only the schedules that framework runs (llm/framework.h)");
  }
  cmd->add_option("--chunks", a.chunks, "Model chunks per device to try for interleaved")->capture_default_str();
  cmd->add_option("--max-stages", a.max_stages, "Largest pipeline depth K to consider (default: D)");
  cmd->add_option("--recompute", a.recompute, "Recompute to try: auto (none and full) | none | full (on, off: the same)")->capture_default_str();
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
  const FrameworkOffer& offer = framework_offer(framework_flag(a.framework));
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

// The recipe a framework trains a profile's weights with: mixed precision for 2-byte
// weights, fp32 for fp32 ones; none for a dtype it does not say (the default stays).
std::optional<PrecisionRecipe> framework_recipe(const std::string& dtype) {
  if (dtype == "fp32") return PrecisionRecipe::Fp32;
  if (dtype == "bf16" || dtype == "fp16") return PrecisionRecipe::Bf16Mixed;
  return std::nullopt;
}

// `profile`: the file --profile names, read (load_profile).
SearchRequest make_request(const SearchArgs& a, Profile profile) {
  SearchRequest q;
  q.profile = std::move(profile);
  q.profile_path = a.profile_path;
  q.devices = a.devices;
  if (q.devices < 1) throw InputError("--devices: expected at least 1, got " + std::to_string(a.devices));
  q.hardware = a.hardware_path.empty() ? Hardware::ideal(a.devices) : load_hardware(a.hardware_path);
  q.batch = a.batch;
  if (q.batch > kMaxSearchMicrobatches) {
    std::cerr << "note: --batch " << q.batch << ": micro-batch counts M above " << kMaxSearchMicrobatches
              << " are not searched (simulate -M runs one)\n";
  }
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
  q.stages = a.stages;
  q.optimizer_step = parse_optimizer_step(a.optimizer_step);
  q.runtime = runtime_of(a.runtime);
  if (!a.p2p.empty() || (q.runtime && q.runtime->p2p)) q.p2p = p2p_with_runtime(a.p2p, q.runtime, P2p::Overlapped);
  q.offload = offload_with_flags({}, a.offload, a.offload_fraction);
  if (q.offload.fraction.size() > 1) {
    throw InputError("--offload-fraction: the search tries several stage counts; give one fraction for every stage");
  }
  check_offload(q.offload, 1, q.hardware, "--offload", "--offload-fraction");
  // Without --offload a candidate that does not fit tries selective, then all offload (when
  // the hardware file has a host_link); --offload none keeps every plan's stash on the device.
  q.consider_offload = a.offload.empty();
  if (!a.framework.empty()) {  // what the framework cannot run is neither offered nor taken (llm/framework.h)
    const std::string why = activation_offload_refusal(*framework_from_name(a.framework));
    if (q.offload.active()) throw InputError("--offload: --framework " + a.framework + " cannot run it: " + why);
    q.consider_offload = false;
    // Its static memory is the framework's mixed-precision Adam (llm/layout.h's recipes:
    // 18 bytes per 2-byte weight, 16 per fp32 one), as the job it exports keeps at launch,
    // not the planner's default 8 (the optimizer is not sharded: r copies keep it all).
    if (const std::optional<PrecisionRecipe> recipe = framework_recipe(q.profile.dtype)) {
      q.optimizer_state_factor = optimizer_state_factor(precision_of(*recipe));
    }
  }
  q.recomputes = parse_recompute_choices(a.recompute);
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

// The flags of plan's two forms, by the first long name of each (as InputError names them).
struct PlanFlagSets {
  std::vector<std::string> model;       // add_model_flags': what describes a transformer
  std::vector<std::string> model_form;  // the rest of the model form's own
  std::vector<std::string> profile;     // the --profile form's own, gates included
};

// The options `cmd` declared after its first `before`, put under the help heading `group`;
// returns their names.
std::vector<std::string> group_since(CLI::App* cmd, std::size_t before, const std::string& group) {
  std::vector<std::string> names;
  const std::vector<CLI::Option*> options = cmd->get_options();
  for (std::size_t k = before; k < options.size(); ++k) {
    options[k]->group(group);
    names.push_back(options[k]->get_name());
  }
  return names;
}

std::string first_given(const CLI::App& cmd, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (cmd.count(name) > 0) return name;
  }
  return "";
}

// What a flag of the other form is called in this one, where it has a counterpart.
std::string instead(const std::string& flag) {
  static const std::pair<const char*, const char*> kCounterparts[] = {
      {"--devices", "give --gpus"},
      {"--batch", "give --global-batch-size"},
      {"--hardware", "the model form reads a GPU file, not a hardware file: give --gpu NAME or FILE (profiles/gpus/)"},
      {"--max-stages", "pin p with --pipeline-model-parallel-size"},
      {"--schedules", "pin one with --schedule"},
      {"--gpu", "give --hardware, a hardware file"},
      {"--schedule", "give --schedules"},
  };
  for (const auto& [name, text] : kCounterparts) {
    if (flag == name) return std::string("; ") + text;
  }
  return "";
}

// Which form this run is, refusing a flag of the other: the model described twice
// (--profile and a model flag), a flag of the model form beside --profile, or one of the
// --profile form beside a model, each naming the flag. No --profile and no flag of the
// model form: neither form was asked for.
bool model_form(const CLI::App& cmd, const PlanFlagSets& sets) {
  const bool profile = cmd.count("--profile") > 0;
  const std::string model = first_given(cmd, sets.model);
  if (profile && !model.empty()) throw InputError("--profile and " + model + " describe the model twice: give one");
  const std::string model_flag = model.empty() ? first_given(cmd, sets.model_form) : model;
  if (profile) {
    if (!model_flag.empty()) {
      throw InputError(model_flag + ": a flag of plan with a model (--hf-config or Megatron's model flags), not of "
                       "plan --profile" + instead(model_flag));
    }
    return false;
  }
  if (model_flag.empty()) {
    throw InputError("plan: give --profile FILE, or a model (--hf-config FILE, or --num-layers and Megatron's model "
                     "flags) with --gpu, --gpus and --global-batch-size");
  }
  const std::string other = first_given(cmd, sets.profile);
  if (!other.empty()) {
    throw InputError(other + ": a flag of plan --profile, not of plan with a model (" + model_flag + ")" +
                     instead(other));
  }
  return true;
}

// One number under two names (plan's own and Megatron's): either, or both when equal.
template <typename Ours, typename Theirs>
void same_number(const CLI::App& cmd, const std::string& ours, Ours& value, const std::string& theirs, Theirs other) {
  if (cmd.count(theirs) == 0) return;
  if (cmd.count(ours) > 0 && value != static_cast<Ours>(other)) {
    throw InputError(ours + " " + std::to_string(value) + " and " + theirs + " " + std::to_string(other) +
                     ": one number under two names, given twice: give one");
  }
  value = static_cast<Ours>(other);
}

struct PlanArgs {
  SearchArgs search;
  ModelPlanArgs model;  // the model form, and the flags both forms share
  GateOptions gates;
};

// A profile of `profile synth --hf-config` with --framework is the job it was written
// for (interop/hf_profile.h's hf_profile_job): the model form's search plans it, t, cp,
// ep, d and sharding with the pipeline, so `plan --profile` and `plan --hf-config` give
// one answer for one job. Each device of the profile is a tensor-parallel group of its t
// GPUs; a hardware file must be the cluster `profile synth --hardware-output` writes for
// them. A flag that steers only the profile search is refused, naming it.
void plan_profile_as_job(PlanArgs& a, const CLI::App& cmd, const PlanFlagSets& sets, const HfProfileJob& job) {
  const SearchArgs& search = a.search;
  const std::string what = search.profile_path + " is an analytic profile of " + job.model.shape.name + " on " +
                           job.gpu + " (profile synth --hf-config), planned with --framework as its job";
  for (const std::string& flag : sets.profile) {
    if (flag == "--profile" || flag == "--hardware" || flag == "--devices" || flag == "--batch") continue;
    if (cmd.count(flag) > 0) {
      throw InputError(flag + ": " + what + " (the layout search of plan --hf-config), which this flag of the "
                       "profile search does not steer: drop it, or drop --framework to search the profile's "
                       "pipeline alone");
    }
  }
  const int t = job.options.tensor_parallel;
  const int64_t gpus = static_cast<int64_t>(search.devices) * t;
  if (search.devices < 1 || gpus > (int64_t{1} << 24)) {
    throw InputError("--devices: expected 1 to " + std::to_string((int64_t{1} << 24) / t) + " tensor-parallel groups of " +
                     std::to_string(t) + ", got " + std::to_string(search.devices));
  }
  if (!search.hardware_path.empty()) {
    const Json have = hardware_to_json(load_hardware(search.hardware_path));
    const Json want = hardware_to_json(tensor_parallel_hardware(job.gpu_model, static_cast<int>(gpus), t));
    if (have != want) {
      throw InputError("--hardware: " + search.hardware_path + " is not the cluster of " + std::to_string(gpus) + " " +
                       job.gpu + " GPUs that `profile synth --hf-config --gpu " + job.gpu + " --gpus " +
                       std::to_string(gpus) + " --hardware-output` writes, and " + what +
                       " on that GPU file: give that file or none, or drop --framework to search the profile's "
                       "pipeline on this hardware");
    }
  }
  ModelPlanArgs m = a.model;  // --pipeline-model-parallel-size, --framework, --top, --json, --out
  m.gpu = job.gpu;
  m.request.gpus = static_cast<int>(gpus);
  if (search.batch < 1 || search.batch > std::numeric_limits<int>::max()) {
    throw InputError("--batch: expected 1 to " + std::to_string(std::numeric_limits<int>::max()) + " sequences, got " +
                     std::to_string(search.batch));
  }
  m.request.global_batch = static_cast<int>(search.batch);
  TransformerShape shape = job.model.shape;
  shape.sequence = static_cast<int>(job.options.sequence);
  run_model_plan_on(m, cmd.get_name(), shape,
                    what + ": the search of plan --hf-config on --gpu " + job.gpu + " --gpus " + std::to_string(gpus) +
                        " (t, cp, ep, d and sharding with the pipeline)\n");
}

// The --profile form: its own flags, then the shared ones under Megatron's names.
void run_profile_plan(PlanArgs& a, const CLI::App& cmd, const PlanFlagSets& sets) {
  SearchArgs& search = a.search;
  same_number(cmd, "--devices", search.devices, "--gpus", a.model.request.gpus);
  same_number(cmd, "--batch", search.batch, "--global-batch-size", a.model.request.global_batch);
  if (cmd.count("--devices") + cmd.count("--gpus") == 0) throw InputError("--devices (or --gpus): required with --profile");
  if (cmd.count("--batch") + cmd.count("--global-batch-size") == 0) {
    throw InputError("--batch (or --global-batch-size): required with --profile");
  }
  search.stages = a.model.request.p;
  std::optional<Profile> profile;  // read here with --framework, else by the search below
  if (cmd.count("--framework") > 0) {
    search.framework = a.model.flags.framework;
    (void)framework_flag(search.framework);  // a name it does not know exits 2 before any file is read
    profile = load_profile(search.profile_path);
    std::string why;
    if (const std::optional<HfProfileJob> job = hf_profile_job(*profile, &why)) {
      plan_profile_as_job(a, cmd, sets, *job);
      return;
    }
    if (!why.empty()) std::cerr << "plan: " << why << ": searched as a profile (its pipeline; t, cp, d not searched)\n";
  }
  const int top_n = a.model.request.top;
  const bool as_json = a.model.json;
  const std::string& output = a.model.out;
  if (top_n < 1) throw InputError("--top: expected at least 1, got " + std::to_string(top_n));
  a.gates.check(as_json, !search.hardware_path.empty(), {{"--output", output}});
  SearchRequest q = make_request(search, profile ? std::move(*profile) : load_profile(search.profile_path));
  // zb-auto orders searched only where they can rank that high (bounds on a step from
  // time 0: under post-validation every order is searched).
  q.exact_top = q.optimizer_step == OptimizerStep::PostValidation ? 0 : std::max(10, top_n);
  SearchResult r = search_plans(q, progress_bar());
  const Candidate& best = winner(r);  // throws (exit 2) when nothing fits
  const std::vector<std::string> why = explain_winner(r);
  const StepFacts facts = winner_facts(best, r, q.profile.model);
  const std::vector<GateResult> gates = a.gates.evaluate(facts);
  std::vector<std::pair<std::string, std::string>> files = a.gates.junit_file("plan", gates);
  Plan chosen = best.plan;
  if (q.runtime) chosen.runtime = search.runtime;  // as given: a path from here, or a bundled name
  if (!output.empty()) {
    Plan plan = chosen;
    plan.profile = relative_profile(q.profile_path, output);
    if (q.runtime) plan.runtime = runtime_reference(*q.runtime, output);  // simulate --plan predicts with it
    if (!best.layer_order.empty()) {
      // The downset partition's stages are contiguous in another layer order: the
      // profile in that order goes beside the plan (docs/planner.md), in the same
      // all-or-nothing write as the plan.
      const std::string reordered = reordered_profile_path(output);
      files.emplace_back(reordered, profile_to_json(reordered_profile(q, best)).dump(1) + "\n");
      plan.profile = relative_profile(reordered, output);
    }
    files.emplace_back(output, plan_to_json(plan).dump(2) + "\n");
  }
  write_outputs(files);
  std::string json;
  if (as_json) {
    Json top = Json::array();
    for (int k = 0; k < top_n && k < static_cast<int>(r.ranking.size()); ++k) {
      top.push_back(candidate_to_json(r.candidates[r.ranking[k]], q.batch));
    }
    Json out = {{"format", "pipescope.plan_search"}, {"version", 1},
                {"candidates", r.candidates.size()}, {"fitting", r.ranking.size()},
                {"memory_limit_bytes", r.memory_limit_bytes}, {"top", top},
                {"why", why}, {"plan", plan_to_json(chosen)}};
    json = with_gates(std::move(out), gates).dump(2) + "\n";
  }
  std::string table = top_table(r, top_n) + "\nWhy " + best.label() + ":\n";
  for (const std::string& line : why) table += "  - " + line + "\n";
  std::cout << result_text(a.gates, as_json, json, table, step_markdown("plan", facts), gates);
  enforce(gates);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Search for the fastest plan that fits in memory: with --profile, stages, micro-batches, schedule, "
              "re-materialisation and replication (docs/planner.md); with a model (--hf-config or Megatron's "
              "model flags) and --gpu, the parallel layout t, SP, cp, ep, d, p, v, schedule, b, M, recompute, "
              "sharding (docs/llm-scale.md). Flags of one form are refused in the other");
  auto sets = std::make_shared<PlanFlagSets>();
  std::size_t before = cmd->get_options().size();
  add_search_options(cmd, a->search, /*sweep=*/false);
  a->gates.add_step_gates(cmd);
  sets->profile = group_since(cmd, before, "--profile form (a measured profile; planner/search.h)");
  before = cmd->get_options().size();
  add_model_flags(cmd, a->model.flags);
  sets->model = group_since(cmd, before, "Model form: the model (a Hugging Face config, or Megatron's model flags)");
  before = cmd->get_options().size();
  add_model_form_flags(cmd, a->model);
  sets->model_form = group_since(cmd, before, "Model form: the search (llm/layout_search.h)");
  before = cmd->get_options().size();
  add_shared_plan_flags(cmd, a->model, PlanForms::Both);
  group_since(cmd, before, "Both forms (Megatron's names where the concept is one)");
  cmd->callback([a, sets, cmd] {
    if (model_form(*cmd, *sets)) {
      run_model_plan(a->model, *cmd);
    } else {
      run_profile_plan(*a, *cmd, *sets);
    }
  });
}

// `llm-plan`: plan's model form under its old name, nothing of its own.
void add_llm_plan_command(CLI::App& app) {
  auto a = std::make_shared<ModelPlanArgs>();
  CLI::App* cmd = app.add_subcommand("llm-plan", "The old name of `pipescope plan` with a model (--hf-config or "
                                                 "Megatron's model flags): the same search, flags, table, JSON and "
                                                 "--out (docs/llm-scale.md)");
  add_model_flags(cmd, a->flags);
  add_model_form_flags(cmd, *a);
  add_shared_plan_flags(cmd, *a, PlanForms::Model);
  cmd->callback([a, cmd] { run_model_plan(*a, *cmd); });
}

void add_sweep_command(CLI::App& app) {
  struct Args {
    SearchArgs search;
    std::string prefix = "sweep";
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("sweep", "Simulate every candidate plan; write them all (PREFIX.csv, PREFIX.json) "
                                              "with the Pareto front of throughput against peak memory marked");
  add_search_options(cmd, a->search, /*sweep=*/true);
  cmd->add_option("-o,--output", a->prefix, "Output prefix: writes PREFIX.csv and PREFIX.json")->capture_default_str();
  cmd->callback([a] {
    SearchRequest q = make_request(a->search, load_profile(a->search.profile_path));
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
