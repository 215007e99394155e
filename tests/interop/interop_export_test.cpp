// Plans out: every flag the Megatron-LM exporter writes is one core_v0.15.0's
// megatron/training/arguments.py defines, with a value of the type it declares; the
// layers per virtual stage Megatron derives from those flags (its rules re-implemented
// here from transformer_config.py and pipeline_parallel_layer_layout.py) equal the
// plan's, over random plans; torch and DeepSpeed names come from tables of PyTorch
// 2.13's schedules.py and DeepSpeed's pipe/module.py + constants.py.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <regex>

#include "core/error.h"
#include "interop/export.h"
#include "llm/plan_layout.h"
#include "tests/interop/export_fixtures.h"

using namespace pipescope;

namespace {

enum class Kind { Int, Switch, Str, Choice };
struct FlagDef {
  Kind kind;
  std::vector<std::string> choices;
};
// Megatron-LM core_v0.15.0, megatron/training/arguments.py: the add_argument calls of
// the flags the exporter may write (type=int / action='store_true' / type=str / choices).
const std::map<std::string, FlagDef> kMegatronFlags = {
    {"--tensor-model-parallel-size", {Kind::Int, {}}},          // _add_distributed_args, type=int
    {"--sequence-parallel", {Kind::Switch, {}}},                // _add_training_args, store_true
    {"--pipeline-model-parallel-size", {Kind::Int, {}}},        // type=int
    {"--decoder-first-pipeline-num-layers", {Kind::Int, {}}},   // type=int
    {"--decoder-last-pipeline-num-layers", {Kind::Int, {}}},    // type=int
    {"--pipeline-model-parallel-layout", {Kind::Str, {}}},      // type=str
    {"--num-layers-per-virtual-pipeline-stage", {Kind::Int, {}}},
    {"--num-virtual-stages-per-pipeline-rank", {Kind::Int, {}}},
    {"--account-for-embedding-in-pipeline-split", {Kind::Switch, {}}},  // store_true
    {"--account-for-loss-in-pipeline-split", {Kind::Switch, {}}},       // store_true
    {"--num-layers", {Kind::Int, {}}},                          // _add_network_size_args
    {"--seq-length", {Kind::Int, {}}},                          // _add_data_args
    {"--micro-batch-size", {Kind::Int, {}}},                    // _add_training_args
    {"--global-batch-size", {Kind::Int, {}}},
    {"--recompute-granularity", {Kind::Choice, {"full", "selective"}}},
    {"--recompute-method", {Kind::Choice, {"uniform", "block"}}},
    {"--recompute-num-layers", {Kind::Int, {}}},
    {"--bf16", {Kind::Switch, {}}},                             // _add_mixed_precision_args
    {"--fp16", {Kind::Switch, {}}},
    // what a v2 plan's layout adds
    {"--context-parallel-size", {Kind::Int, {}}},               // _add_distributed_args
    {"--expert-model-parallel-size", {Kind::Int, {}}},          // _add_moe_args
    {"--use-distributed-optimizer", {Kind::Switch, {}}},        // _add_distributed_args, store_true
    {"--use-tp-pp-dp-mapping", {Kind::Switch, {}}},             // store_true
    {"--fp8-format", {Kind::Choice, {"e4m3", "hybrid"}}},       // _add_transformer_engine_args
    {"--fp8-recipe", {Kind::Choice, {"tensorwise", "delayed", "mxfp8", "blockwise"}}},  // arguments.py:1318
    {"--fp8-param-gather", {Kind::Switch, {}}},                 // store_true
    {"--attention-backend", {Kind::Choice, {"flash", "fused", "unfused", "local", "auto"}}},  // AttnBackend, :1562
    {"--tp-comm-overlap", {Kind::Switch, {}}},                  // store_true, arguments.py:2090
};

// PyTorch 2.13, torch/distributed/pipelining/schedules.py __all__; true = a
// PipelineScheduleSingle (takes one stage), false = takes a list of stages.
const std::map<std::string, bool> kTorchClasses = {
    {"ScheduleGPipe", true},          {"Schedule1F1B", true},          {"ScheduleInterleaved1F1B", false},
    {"ScheduleLoopedBFS", false},     {"ScheduleInterleavedZeroBubble", false},
    {"ScheduleZBVZeroBubble", false}, {"ScheduleDualPipeV", false},
};

// DeepSpeed runtime/constants.py keys of the batch settings.
const std::vector<std::string> kDeepSpeedBatchKeys = {"train_batch_size", "train_micro_batch_size_per_gpu",
                                                      "gradient_accumulation_steps"};

using FlagMap = std::map<std::string, std::string>;

FlagMap parse_flags(const ExportResult& r) {
  FlagMap out;
  for (const Json& f : r.json["flags"]) out[f[0].get<std::string>()] = f.size() > 1 ? f[1].get<std::string>() : "";
  return out;
}

int to_int(const FlagMap& f, const std::string& k) { return std::stoi(f.at(k)); }

// Megatron's decoder layers per virtual stage (model order) from its flags, by the
// rules of core_v0.15.0's TransformerConfig.__post_init__ and get_num_layers_to_build.
std::vector<int> megatron_layers(const FlagMap& f) {
  const int K = to_int(f, "--pipeline-model-parallel-size"), L = to_int(f, "--num-layers");
  int v = f.count("--num-virtual-stages-per-pipeline-rank") ? to_int(f, "--num-virtual-stages-per-pipeline-rank") : 1;
  std::vector<int> out;
  if (f.count("--pipeline-model-parallel-layout")) {
    std::string layout = f.at("--pipeline-model-parallel-layout");
    std::string unrolled;
    for (std::size_t i = 0; i < layout.size(); ++i) {
      if (i + 1 < layout.size() && layout[i + 1] == '*') {
        std::size_t end = i + 2;
        while (end < layout.size() && std::isdigit(static_cast<unsigned char>(layout[end]))) ++end;
        unrolled += std::string(std::stoi(layout.substr(i + 2, end - i - 2)), layout[i]);
        i = end - 1;
      } else {
        unrolled += layout[i];
      }
    }
    EXPECT_EQ(unrolled.front(), 'E');
    EXPECT_EQ(unrolled.back(), 'L');
    out.push_back(0);
    for (char c : unrolled) {
      if (c == '|') out.push_back(0);
      if (c == 't') ++out.back();
    }
    EXPECT_EQ(static_cast<int>(out.size()) % K, 0) << "layout stages must be a multiple of the pipeline size";
    return out;
  }
  std::vector<int> per_rank(K, 0);
  const bool first = f.count("--decoder-first-pipeline-num-layers"), last = f.count("--decoder-last-pipeline-num-layers");
  if (first || last) {
    int rest = L, middle = K;
    if (first) rest -= to_int(f, "--decoder-first-pipeline-num-layers"), --middle;
    if (last) rest -= to_int(f, "--decoder-last-pipeline-num-layers"), --middle;
    EXPECT_TRUE(middle == 0 ? rest == 0 : rest % middle == 0) << "middle layers must divide evenly";
    for (int p = 0; p < K; ++p) per_rank[p] = middle ? rest / middle : 0;
    if (first) per_rank[0] = to_int(f, "--decoder-first-pipeline-num-layers");
    if (last) per_rank[K - 1] = to_int(f, "--decoder-last-pipeline-num-layers");
    for (int p = 0; p < K; ++p) EXPECT_EQ(per_rank[p] % v, 0) << "rank " << p << " layers must divide by v";
    for (int s = 0; s < K * v; ++s) out.push_back(per_rank[s % K] / v);
    return out;
  }
  const int e = f.count("--account-for-embedding-in-pipeline-split"), l = f.count("--account-for-loss-in-pipeline-split");
  EXPECT_EQ((L + e + l) % (K * v), 0) << "layers (+ embedding/loss) must divide over K v stages";
  const int u = (L + e + l) / (K * v);
  for (int s = 0; s < K * v; ++s) out.push_back(u - (s == 0 ? e : 0) - (s == K * v - 1 ? l : 0));
  return out;
}

void expect_valid_megatron_flags(const FlagMap& f) {
  for (const auto& [name, value] : f) {
    auto def = kMegatronFlags.find(name);
    ASSERT_NE(def, kMegatronFlags.end()) << name << " is not a core_v0.15.0 argument";
    switch (def->second.kind) {
      case Kind::Switch: EXPECT_EQ(value, "") << name; break;
      case Kind::Int: EXPECT_TRUE(std::regex_match(value, std::regex("-?[0-9]+"))) << name << " " << value; break;
      case Kind::Str: EXPECT_FALSE(value.empty()) << name; break;
      case Kind::Choice:
        EXPECT_NE(std::find(def->second.choices.begin(), def->second.choices.end(), value), def->second.choices.end()) << name << " " << value;
        break;
    }
  }
  // arguments.py: at most one of these three; the layout excludes the other split flags.
  EXPECT_LE(f.count("--num-layers-per-virtual-pipeline-stage") + f.count("--num-virtual-stages-per-pipeline-rank") +
                f.count("--pipeline-model-parallel-layout"), 1u);
  if (f.count("--pipeline-model-parallel-layout") || f.count("--decoder-first-pipeline-num-layers") ||
      f.count("--decoder-last-pipeline-num-layers")) {
    EXPECT_EQ(f.count("--account-for-embedding-in-pipeline-split") + f.count("--account-for-loss-in-pipeline-split"), 0u);
  }
}

std::string error_of(const Plan& plan, const Profile& profile, Framework target) {
  try {
    export_plan(plan, profile, target);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// Decoder counts for K x v stages of one of four shapes.
std::vector<int> random_cuts(std::mt19937_64& rng, int K, int v, int shape) {
  std::uniform_int_distribution<int> n(1, 6);
  const int S = K * v;
  std::vector<int> c(S, n(rng));
  if (shape == 1) {  // embedding and/or loss counted as a layer
    const int u = c[0] + 1;
    std::fill(c.begin(), c.end(), u);
    if (rng() % 2) c[0] = u - 1;
    if (rng() % 2 || c[0] == u) c[S - 1] = u - 1;
  } else if (shape == 2 && K >= 2) {  // uneven ends
    const int a = n(rng), b = n(rng);
    for (int s = 0; s < S; ++s) c[s] = s % K == 0 ? a : (s % K == K - 1 ? b : c[s]);
  } else if (shape == 3) {  // anything
    for (int& x : c) x = n(rng);
  }
  return c;
}

}  // namespace

TEST(ExportMegatron, RandomPlansRoundTripThroughMegatronsLayerRules) {
  const uint64_t seed = 17;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 400; ++trial) {
    const int K = 1 + static_cast<int>(rng() % 6);
    const int v = K > 1 && rng() % 2 ? 2 + static_cast<int>(rng() % 2) : 1;
    const int shape = trial % 4;
    std::vector<int> c = random_cuts(rng, K, v, shape);
    int total = 0;
    for (int x : c) total += x;
    Profile profile = llm_profile(total);
    Plan plan = plan_of(c, K, 1 + static_cast<int>(rng() % 3), 2 * K, 1 + static_cast<int>(rng() % 4),
                        v > 1 ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB);
    if (trial % 2) {  // a v2 plan's layout: every field Megatron-LM can say, at random
      ParallelLayout l;
      l.t = 2, l.p = K, l.v = v, l.d = static_cast<int>(plan.stages.front().devices.size());
      l.microbatches = plan.microbatches;
      l.micro_batch = static_cast<int>(plan.batch_size / (plan.microbatches * l.d));
      l.sequence_parallel = rng() % 2, l.cp = 1 + static_cast<int>(rng() % 2), l.ep = 1 + static_cast<int>(rng() % 2);
      l.sharding = rng() % 2 ? Sharding::DistributedOptimizer : Sharding::None;
      l.recompute = static_cast<Recompute>(rng() % 3);
      l.precision = static_cast<PrecisionRecipe>(rng() % 3);
      if (l.precision == PrecisionRecipe::Fp8Params) l.sharding = Sharding::DistributedOptimizer;
      l.order = rng() % 2 || l.cp != l.ep ? "tp-cp-ep-dp-pp" : "tp-cp-ep-pp-dp";  // pp-dp needs cp = ep
      plan.layout = layout_to_json(l);
    }
    ExportResult r = export_plan(plan, profile, Framework::Megatron);
    FlagMap f = parse_flags(r);
    SCOPED_TRACE("seed " + std::to_string(seed) + " trial " + std::to_string(trial) + "\n" + r.text);
    expect_valid_megatron_flags(f);
    if (K == 1) continue;  // no pipeline: Megatron ignores the split
    EXPECT_EQ(megatron_layers(f), c);
    if (shape < 3) {
      EXPECT_NE(r.json["cut"], "layout") << "a structured cut needs no layout";
    }
    EXPECT_EQ(to_int(f, "--micro-batch-size") * r.json["data_parallel_size"].get<int>() * plan.microbatches,
              to_int(f, "--global-batch-size"));
  }
}

TEST(ExportMegatron, KnownPlanGivesTheExpectedFlags) {
  // 80 layers over 8 ranks, 10 each: an even split; recompute keeps one unit of 10.
  Plan plan = plan_of(std::vector<int>(8, 10), 8, 4, 16, 2, ScheduleKind::OneFOneB);
  plan.recompute = Recompute::Full;
  ExportResult r = export_plan(plan, llm_profile(80), Framework::Megatron);
  FlagMap f = parse_flags(r);
  EXPECT_EQ(f.at("--tensor-model-parallel-size"), "2");
  EXPECT_EQ(f.count("--sequence-parallel"), 1u);  // what the profile's t-way activations assume
  EXPECT_EQ(f.at("--pipeline-model-parallel-size"), "8");
  EXPECT_EQ(f.at("--num-layers"), "80");
  EXPECT_EQ(f.at("--seq-length"), "4096");
  EXPECT_EQ(f.at("--micro-batch-size"), "2");
  EXPECT_EQ(f.at("--global-batch-size"), "128");  // 2 x 16 micro-batches x 4 replicas
  EXPECT_EQ(f.at("--recompute-granularity"), "full");
  EXPECT_EQ(f.at("--recompute-method"), "uniform");
  EXPECT_EQ(f.at("--recompute-num-layers"), "10");
  EXPECT_EQ(f.count("--bf16"), 1u);
  EXPECT_EQ(r.json["world_size"], 64);  // 2 x 8 x 4
  EXPECT_EQ(r.json["data_parallel_size"], 4);
  EXPECT_NE(r.text.find("--pipeline-model-parallel-size 8 \\\n"), std::string::npos) << r.text;
}

TEST(ExportMegatron, UnevenCutsUseTheirFlags) {
  FlagMap acc = parse_flags(export_plan(plan_of({3, 4, 4, 3}, 4, 1, 8, 1, ScheduleKind::OneFOneB), llm_profile(14),
                                        Framework::Megatron));
  EXPECT_EQ(acc.count("--account-for-embedding-in-pipeline-split"), 1u);
  EXPECT_EQ(acc.count("--account-for-loss-in-pipeline-split"), 1u);
  FlagMap ends = parse_flags(export_plan(plan_of({5, 4, 4, 2}, 4, 1, 8, 1, ScheduleKind::OneFOneB), llm_profile(15),
                                         Framework::Megatron));
  EXPECT_EQ(ends.at("--decoder-first-pipeline-num-layers"), "5");
  EXPECT_EQ(ends.at("--decoder-last-pipeline-num-layers"), "2");
  ExportResult layout_result = export_plan(plan_of({1, 4, 2, 3}, 4, 1, 8, 1, ScheduleKind::OneFOneB), llm_profile(10),
                                           Framework::Megatron);
  FlagMap layout = parse_flags(layout_result);
  EXPECT_EQ(layout.at("--pipeline-model-parallel-layout"), "Et|t*4|t*2|t*3L");
  // One shell word: '|' and '*' quoted.
  EXPECT_NE(layout_result.text.find("--pipeline-model-parallel-layout 'Et|t*4|t*2|t*3L'"), std::string::npos) << layout_result.text;
  // Interleaved, v = 2: stages 0..7 in model order, rank = s % 4.
  FlagMap vpp = parse_flags(export_plan(plan_of(std::vector<int>(8, 2), 4, 1, 8, 1, ScheduleKind::Interleaved),
                                        llm_profile(16), Framework::Megatron));
  EXPECT_EQ(vpp.at("--num-virtual-stages-per-pipeline-rank"), "2");
}

TEST(ExportMegatron, OneRankHasNoVirtualStages) {
  // K = 1: the whole model on every rank; Megatron refuses virtual stages without a
  // pipeline (arguments.py: interleaving needs --pipeline-model-parallel-size > 1).
  Plan one = plan_of({3, 5}, 1, 4, 2, 1, ScheduleKind::Interleaved);
  FlagMap f = parse_flags(export_plan(one, llm_profile(8), Framework::Megatron));
  EXPECT_EQ(f.at("--pipeline-model-parallel-size"), "1");
  EXPECT_EQ(f.count("--num-virtual-stages-per-pipeline-rank"), 0u);
  EXPECT_EQ(f.count("--pipeline-model-parallel-layout"), 0u);
}

TEST(ExportMegatron, RefusesWhatMegatronCannotSay) {
  Profile p = llm_profile(8);
  EXPECT_NE(error_of(plan_of({4, 4}, 2, 1, 4, 1, ScheduleKind::GPipe), p, Framework::Megatron).find("GPipe"), std::string::npos);
  EXPECT_NE(error_of(plan_of({4, 4}, 2, 1, 4, 1, ScheduleKind::ZeroBubbleH1), p, Framework::Megatron).find("zb-h1"), std::string::npos);
  Plan mixed = plan_of({4, 4}, 2, 2, 4, 1, ScheduleKind::OneFOneB);
  mixed.stages[1].devices = {2, 3, 4};
  mixed.batch_size = 12;
  const std::string e = error_of(mixed, p, Framework::Megatron);
  EXPECT_NE(e.find("stages[1].devices"), std::string::npos) << e;
  EXPECT_NE(e.find("data-parallel"), std::string::npos) << e;
  Plan fractional = plan_of({4, 4}, 2, 1, 4, 1, ScheduleKind::OneFOneB);
  fractional.batch_size = 6;  // 6 samples over 4 micro-batches
  EXPECT_NE(error_of(fractional, p, Framework::Megatron).find("batch_size"), std::string::npos);
}

// A plan that fits only because it offloads activations to host (core/offload.h) cannot
// be exported without it: none of the three frameworks runs that offload
// (llm/framework.h's activation_offload_refusal), and dropping it would run out of memory
// at launch. Every target refuses it, naming the plan's "offload" and the framework's own
// nearest mechanism; the same plan without the offload exports.
TEST(ExportAll, RefuseAPlanThatOffloadsActivations) {
  const Profile p = llm_profile(8);
  Plan offloading = plan_of({4, 4}, 2, 1, 4, 1, ScheduleKind::OneFOneB);
  offloading.offload = Offload{OffloadPolicy::All, {0.5}};
  const std::vector<std::pair<Framework, std::string>> cases = {
      {Framework::Megatron, "--cpu-offloading"},
      {Framework::Torch, "save_on_cpu"},
      {Framework::DeepSpeed, "cpu_checkpointing"}};
  for (const auto& [target, names] : cases) {
    const std::string e = error_of(offloading, p, target);
    EXPECT_NE(e.find("offload"), std::string::npos) << e;
    EXPECT_NE(e.find("(all)"), std::string::npos) << e;
    EXPECT_NE(e.find(names), std::string::npos) << e;
    Plan plain = offloading;
    plain.offload = Offload{};
    EXPECT_NO_THROW(export_plan(plain, p, target, "plan.json", false, 8)) << to_string(target);
  }
}

TEST(ExportTorch, ScheduleClassesAndSplitPoints) {
  Profile p = llm_profile(8);
  const std::map<ScheduleKind, std::string> expected = {{ScheduleKind::GPipe, "ScheduleGPipe"},
                                                        {ScheduleKind::OneFOneB, "Schedule1F1B"},
                                                        {ScheduleKind::Interleaved, "ScheduleInterleaved1F1B"},
                                                        {ScheduleKind::ZeroBubbleH1, "ScheduleInterleavedZeroBubble"}};
  for (const auto& [kind, cls] : expected) {
    const std::vector<int> cuts = kind == ScheduleKind::Interleaved ? std::vector<int>{2, 2, 2, 2} : std::vector<int>{3, 5};
    ExportResult r = export_plan(plan_of(cuts, 2, 1, 4, 1, kind), p, Framework::Torch);
    EXPECT_EQ(r.json["schedule_class"], cls);
    ASSERT_TRUE(kTorchClasses.count(cls)) << cls;
    const bool single = kTorchClasses.at(cls);
    EXPECT_NE(r.text.find(single ? "schedule_class(stages[0]," : "schedule_class(stages,"), std::string::npos) << cls;
    if (kind == ScheduleKind::Interleaved) {
      // Stage s starts at layer 1 + 2 s (after the embedding): model.layers.2, .4, .6.
      EXPECT_EQ(r.json["split_points"], Json::array({"model.layers.2", "model.layers.4", "model.layers.6"}));
      EXPECT_EQ(r.json["stage_ranks"], Json::array({0, 1, 0, 1}));
    } else {
      EXPECT_EQ(r.json["split_points"], Json::array({"model.layers.3"}));
    }
  }
}

TEST(ExportTorch, RefusesWhatTheConstructorsRefuse) {
  // Schedule1F1B (not ScheduleGPipe, in 2.13): n_microbatches >= stages; ScheduleInterleavedZeroBubble:
  // M a multiple of max(1, M / K) rounds (9 over K = 4 is 2 rounds: refused).
  const std::string few = error_of(plan_of({4, 4}, 2, 1, 1, 1, ScheduleKind::OneFOneB), llm_profile(8), Framework::Torch);
  EXPECT_NE(few.find("Schedule1F1B needs at least as many micro-batches"), std::string::npos) << few;
  const std::string rounds = error_of(plan_of({2, 2, 2, 2}, 4, 1, 9, 1, ScheduleKind::ZeroBubbleH1), llm_profile(8), Framework::Torch);
  EXPECT_NE(rounds.find("rounds"), std::string::npos) << rounds;
  EXPECT_NO_THROW(export_plan(plan_of({2, 2, 2, 2}, 4, 1, 8, 1, ScheduleKind::ZeroBubbleH1), llm_profile(8), Framework::Torch));
}

TEST(ExportTorch, CsvRowsPassTorchsScheduleValidation) {
  // _validate_schedule (PyTorch 2.13): every stage has M forwards, as many I as W, and
  // B + (I + W) / 2 = M backwards; every action of row r is a stage rank r holds.
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved, ScheduleKind::ZeroBubbleH1}) {
    const std::vector<int> cuts = kind == ScheduleKind::Interleaved ? std::vector<int>{1, 2, 2, 1, 1, 1} : std::vector<int>{2, 3, 3};
    Plan plan = plan_of(cuts, 3, 1, 6, 1, kind);
    plan.recompute = recompute_from_r_ops(kind == ScheduleKind::OneFOneB);  // R ops are left out of the CSV
    ExportResult r = export_plan(plan, llm_profile(8), Framework::Torch, "plan.json", true);
    EXPECT_EQ(r.json["schedule_class"], "_PipelineScheduleRuntime");
    const Json& rows = r.json["schedule_csv"];
    ASSERT_EQ(rows.size(), 3u);
    std::map<int, std::map<char, int>> count;
    for (std::size_t rank = 0; rank < rows.size(); ++rank) {
      for (const Json& cell : rows[rank]) {
        std::smatch m;
        const std::string text = cell.get<std::string>();
        ASSERT_TRUE(std::regex_match(text, m, std::regex("([0-9]+)([FBIW])([0-9]+)"))) << text;
        const int stage = std::stoi(m[1]);
        EXPECT_EQ(stage % 3, static_cast<int>(rank)) << text;
        ++count[stage][m[2].str()[0]];
      }
    }
    ASSERT_EQ(static_cast<int>(count.size()), static_cast<int>(cuts.size()));
    for (auto& [stage, c] : count) {
      EXPECT_EQ(c['F'], 6) << to_string(kind) << " stage " << stage;
      EXPECT_EQ(c['I'], c['W']) << to_string(kind) << " stage " << stage;
      EXPECT_EQ(c['B'] + (c['I'] + c['W']) / 2, 6) << to_string(kind) << " stage " << stage;
    }
    EXPECT_NE(r.text.find("schedule._load_csv(f.name, format=\"compute_only\")"), std::string::npos);
  }
}

TEST(ExportDeepSpeed, PartsConfigAndRefusals) {
  // deepspeed.runtime.utils.partition_uniform(10, 4) = [0, 3, 6, 8, 10]: decoders 2,3,2,1
  // plus the embedding in stage 0 and the head in stage 3 give exactly those parts.
  ExportResult uniform = export_plan(plan_of({2, 3, 2, 1}, 4, 2, 8, 2, ScheduleKind::OneFOneB), llm_profile(8),
                                     Framework::DeepSpeed);
  EXPECT_EQ(uniform.json["parts"], Json::array({0, 3, 6, 8, 10}));
  EXPECT_EQ(uniform.json["partition_method"], "uniform");
  ExportResult custom = export_plan(plan_of({4, 1, 1, 2}, 4, 2, 8, 2, ScheduleKind::OneFOneB), llm_profile(8),
                                    Framework::DeepSpeed);
  EXPECT_EQ(custom.json["parts"], Json::array({0, 5, 6, 7, 10}));
  EXPECT_EQ(custom.json["partition_method"], "pipescope");
  const Json& config = custom.json["config"];
  for (const std::string& key : kDeepSpeedBatchKeys) EXPECT_TRUE(config.contains(key)) << key;
  // DeepSpeed: train_batch_size = micro-batch x gradient accumulation x data parallel.
  EXPECT_EQ(config["train_batch_size"].get<int>(),
            config["train_micro_batch_size_per_gpu"].get<int>() * config["gradient_accumulation_steps"].get<int>() * 2);
  EXPECT_EQ(config["gradient_accumulation_steps"], 8);
  const std::string e = error_of(plan_of({2, 2, 2, 2}, 2, 1, 4, 1, ScheduleKind::Interleaved), llm_profile(8), Framework::DeepSpeed);
  EXPECT_NE(e.find("1F1B"), std::string::npos) << e;
}
