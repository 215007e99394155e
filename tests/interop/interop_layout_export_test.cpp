// A v2 plan's layout in the exports: every field Megatron-LM can say comes out as its
// core_v0.15.0 flag, the rank groups are the ones Megatron-Core's RankGenerator forms
// (strides and ranks per node in closed form below), and every field a framework lacks
// -- or a layout that contradicts its own plan -- is refused naming "layout.<field>".
// python/tests/test_oracle_megatron.py and test_oracle_deepspeed.py hold the same
// exports to the frameworks' own parsers. Also: the model a profile's specs state
// (llm/profile_layers.h), which the GUI's memory split per GPU needs.
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "interop/export.h"
#include "interop/hf_config.h"
#include "interop/hf_profile.h"
#include "llm/profile_layers.h"
#include "llm/framework.h"
#include "llm/plan_layout.h"
#include "tests/interop/export_fixtures.h"
#include "tests/support/source_paths.h"

using namespace pipescope;

namespace {

// 2 positions x 4 replicas, 8 micro-batches of 2 samples, 3 + 3 decoder layers; the
// fixture's profile states t = 2.
ParallelLayout base_layout() {
  ParallelLayout l;
  l.t = 2, l.sequence_parallel = true, l.cp = 2, l.ep = 2, l.d = 4, l.p = 2, l.v = 1;
  l.sharding = Sharding::DistributedOptimizer, l.recompute = Recompute::Selective;
  l.micro_batch = 2, l.microbatches = 8;
  return l;
}

Plan plan_with(const ParallelLayout& l) {
  Plan p = plan_of({3, 3}, 2, 4, 8, 2, ScheduleKind::OneFOneB);
  p.layout = layout_to_json(l);
  return p;
}

std::map<std::string, std::string> flags_of(const ExportResult& r) {
  std::map<std::string, std::string> out;
  for (const Json& f : r.json["flags"]) out[f[0].get<std::string>()] = f.size() > 1 ? f[1].get<std::string>() : "";
  return out;
}

std::string refusal(const ParallelLayout& l, Framework target, bool plan_recompute = false) {
  Plan p = plan_with(l);
  p.recompute = recompute_from_r_ops(plan_recompute);
  try {
    export_plan(p, llm_profile(6), target);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(exported)";
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

}  // namespace

TEST(ExportLayout, MegatronSaysEveryField) {
  ParallelLayout l = base_layout();
  l.recompute = Recompute::Full, l.precision = PrecisionRecipe::Fp8Params, l.order = "tp-cp-ep-pp-dp";
  const ExportResult r = export_plan(plan_with(l), llm_profile(6), Framework::Megatron);
  const std::map<std::string, std::string> expected = {
      {"--tensor-model-parallel-size", "2"}, {"--sequence-parallel", ""}, {"--context-parallel-size", "2"},
      {"--expert-model-parallel-size", "2"}, {"--pipeline-model-parallel-size", "2"}, {"--num-layers", "6"},
      {"--seq-length", "4096"}, {"--micro-batch-size", "2"}, {"--global-batch-size", "64"}, {"--bf16", ""},
      {"--fp8-format", "hybrid"}, {"--fp8-recipe", "delayed"}, {"--fp8-param-gather", ""},
      {"--use-distributed-optimizer", ""}, {"--recompute-granularity", "full"}, {"--recompute-method", "uniform"},
      {"--recompute-num-layers", "1"}, {"--use-tp-pp-dp-mapping", ""}, {"--attention-backend", "flash"}};
  EXPECT_EQ(flags_of(r), expected);
  EXPECT_EQ(r.json["world_size"], 2 * 2 * 4 * 2);  // t cp d p
  EXPECT_HAS(r.text, "# 32 GPUs = tensor 2 x context 2 x pipeline 2 x data 4");
}

// The data-parallel overlap the layout was timed with: Megatron-LM's two switches, and
// DeepSpeed's overlap_comm; a gather to overlap that the framework does not have is refused.
TEST(ExportLayout, OverlapIsTheFrameworksSwitch) {
  ParallelLayout l = base_layout();
  l.overlap_grad_reduce = l.overlap_param_gather = true;
  const std::map<std::string, std::string> flags =
      flags_of(export_plan(plan_with(l), llm_profile(6), Framework::Megatron));
  EXPECT_EQ(flags.count("--overlap-grad-reduce"), 1U);
  EXPECT_EQ(flags.count("--overlap-param-gather"), 1U);
  l.sharding = Sharding::None;
  EXPECT_EQ(refusal(l, Framework::Megatron),
            "layout.overlap_param_gather: --overlap-param-gather: Megatron-LM asserts --use-distributed-optimizer for it "
            "(without a sharded "
            "optimizer there is no parameter all-gather to overlap)");
  l.overlap_param_gather = false;
  EXPECT_EQ(flags_of(export_plan(plan_with(l), llm_profile(6), Framework::Megatron)).count("--overlap-param-gather"),
            0U);
  // DeepSpeed: t and d only (no SP, cp, ep), ZeRO-1.
  ParallelLayout ds = base_layout();
  ds.sequence_parallel = false, ds.cp = 1, ds.ep = 1, ds.recompute = Recompute::None;
  ds.overlap_grad_reduce = true;
  const ExportResult r = export_plan(plan_with(ds), llm_profile(6), Framework::DeepSpeed);
  EXPECT_EQ(r.json["config"]["zero_optimization"]["overlap_comm"], true);
  ds.overlap_param_gather = true;
  EXPECT_EQ(refusal(ds, Framework::DeepSpeed),
            "layout.overlap_param_gather: --overlap-param-gather: DeepSpeed's ZeRO stage 1 all-gathers the updated "
            "parameters after the "
            "optimizer step, not overlapped (only ZeRO-3 prefetches them)");
}

TEST(ExportLayout, DefaultsAddNoFlags) {
  // t = 2 without SP, cp = ep = 1, no sharding or recompute, fp32, Megatron's order: only t.
  ParallelLayout l = base_layout();
  l.sequence_parallel = false, l.cp = 1, l.ep = 1, l.sharding = Sharding::None, l.recompute = Recompute::None;
  l.precision = PrecisionRecipe::Fp32;
  const std::map<std::string, std::string> f = flags_of(export_plan(plan_with(l), llm_profile(6), Framework::Megatron));
  for (const char* absent : {"--sequence-parallel", "--context-parallel-size", "--expert-model-parallel-size",
                             "--use-distributed-optimizer", "--recompute-granularity", "--bf16", "--use-tp-pp-dp-mapping"}) {
    EXPECT_EQ(f.count(absent), 0u) << absent;
  }
  EXPECT_EQ(f.at("--tensor-model-parallel-size"), "2");
}

TEST(ExportLayout, RankGroupsAreRankGeneratorsInClosedForm) {
  // tp-cp-ep-dp-pp with t 2, cp 2, d 4, p 2: strides 1, 2, t cp = 4, t cp d = 16; ep (2)
  // comes from the expert generator (tp 2, cp 1, dp cp d / ep = 4): stride t = 2. On 8-GPU
  // nodes a group of stride s holds min(size, 8 / s) ranks per node.
  ParallelLayout l = base_layout();
  const Json g = rank_groups_json(l, 8);
  auto expect = [&](const char* name, int size, int stride, int per_node, bool crosses) {
    EXPECT_EQ(g[name]["size"], size) << name;
    EXPECT_EQ(g[name]["stride"], stride) << name;
    EXPECT_EQ(g[name]["ranks_per_node"], per_node) << name;
    EXPECT_EQ(g[name]["crosses_nodes"], crosses) << name;
    std::vector<int> first;
    for (int i = 0; i < size; ++i) first.push_back(i * stride);
    EXPECT_EQ(g[name]["first_group"], Json(first)) << name;
  };
  expect("tp", 2, 1, 2, false);
  expect("cp", 2, 2, 2, false);
  expect("ep", 2, 2, 2, false);
  expect("dp", 4, 4, 2, true);
  expect("pp", 2, 16, 1, true);
  l.order = "tp-cp-ep-pp-dp";  // --use-tp-pp-dp-mapping: pp stride t cp = 4, dp stride t cp p = 8
  const Json h = rank_groups_json(l, 8);
  EXPECT_EQ(h["pp"]["stride"], 4);
  EXPECT_EQ(h["dp"]["stride"], 8);
  EXPECT_EQ(h["dp"]["ranks_per_node"], 1);
  l.order = "tp-cp-xp-dp-pp";
  try {
    (void)rank_groups_json(l, 8);
    ADD_FAILURE() << "a bad order was accepted";
  } catch (const InputError& e) {
    EXPECT_HAS(e.what(), "layout.order");
  }
}

TEST(ExportLayout, MegatronRefusesWhatItLacks) {
  ParallelLayout l = base_layout();
  l.sharding = Sharding::Zero2;
  const std::string zero2 = refusal(l, Framework::Megatron);
  EXPECT_HAS(zero2, "layout.sharding");
  EXPECT_HAS(zero2, "--use-distributed-optimizer");
  EXPECT_HAS(zero2, "optim_grads");
  l.sharding = Sharding::Zero3;
  EXPECT_HAS(refusal(l, Framework::Megatron), "optim_grads_params");
  l = base_layout();
  l.order = "dp-tp-cp-ep-pp";
  const std::string order = refusal(l, Framework::Megatron);
  EXPECT_HAS(order, "layout.order");
  EXPECT_HAS(order, "--use-tp-pp-dp-mapping");
  l = base_layout();
  l.order = "tp-cp-ep-pp-dp", l.ep = 1;  // pp groups of stride t cp = 4 (dense) and t ep = 2 (experts)
  EXPECT_HAS(refusal(l, Framework::Megatron), "layout.order: --order: \"tp-cp-ep-pp-dp\" (--use-tp-pp-dp-mapping) with cp = 2 and ep = 1");
  l = base_layout();
  l.precision = PrecisionRecipe::Fp8Params, l.sharding = Sharding::None;
  EXPECT_HAS(refusal(l, Framework::Megatron), "layout.precision: --precision: fp8-params: Megatron-LM's --fp8-param-gather");
}

TEST(ExportLayout, ALayoutThatContradictsItsPlanIsRefused) {
  struct Case {
    const char* field;
    void (*edit)(ParallelLayout&);
    const char* numbers;
  };
  const Case cases[] = {
      {"layout.p", [](ParallelLayout& l) { l.p = 4; }, "4, but the plan has pipeline positions 2"},
      {"layout.v", [](ParallelLayout& l) { l.v = 2; }, "2, but the plan has chunks per position 1"},
      {"layout.d", [](ParallelLayout& l) { l.d = 8; }, "8, but the plan has replicas per stage 4"},
      {"layout.microbatches", [](ParallelLayout& l) { l.microbatches = 16; }, "16, but the plan has micro-batches 8"},
      {"layout.micro_batch", [](ParallelLayout& l) { l.micro_batch = 1; }, "1, but the plan has samples per micro-batch"},
      {"layout.t", [](ParallelLayout& l) { l.t = 8; }, "8, but the plan has a profile of tensor-parallel size 2"},
      {"layout.layers_per_chunk", [](ParallelLayout& l) { l.layers_per_chunk = {4, 2}; },
       "[4, 2], but the plan's stages hold [3, 3] decoder layers"},
  };
  for (const Case& c : cases) {
    ParallelLayout l = base_layout();
    c.edit(l);
    for (Framework t : {Framework::Megatron, Framework::Torch, Framework::DeepSpeed}) {
      const std::string e = refusal(l, t);
      EXPECT_HAS(e, std::string(c.field) + ": " + c.numbers);
    }
  }
  EXPECT_HAS(refusal(base_layout(), Framework::Megatron, true), "layout.recompute: \"selective\", but the plan re-materialises");
}

TEST(ExportLayout, APlanOfOneDataParallelPipelineCountsAllOfThem) {
  // llm-plan --out writes one pipeline (one replica per stage, batch_size = b M = 16) and
  // d = 4 in the layout: the export says the whole job, global batch b M d = 64.
  Plan p = plan_of({3, 3}, 2, 1, 8, 2, ScheduleKind::OneFOneB);
  p.layout = layout_to_json(base_layout());
  const ExportResult r = export_plan(p, llm_profile(6), Framework::Megatron);
  const std::map<std::string, std::string> f = flags_of(r);
  EXPECT_EQ(f.at("--global-batch-size"), "64");
  EXPECT_EQ(f.at("--micro-batch-size"), "2");
  EXPECT_EQ(r.json["data_parallel_size"], 4);
  EXPECT_EQ(r.json["world_size"], 32);
  // Two replicas is neither one pipeline nor d of them.
  Plan two = plan_of({3, 3}, 2, 2, 8, 2, ScheduleKind::OneFOneB);
  two.layout = p.layout;
  try {
    export_plan(two, llm_profile(6), Framework::Megatron);
    ADD_FAILURE() << "exported";
  } catch (const InputError& e) {
    EXPECT_HAS(e.what(), "layout.d: 4, but the plan has replicas per stage 2");
  }
}

// Without a pipeline (p = 1) DeepSpeed runs every ZeRO stage (deepspeed/runtime/zero): the
// export writes stage 2 or 3, and ZeRO-3's overlapped parameter gather is its prefetch;
// with a pipeline its PipelineEngine asserts stage < 2, and the export refuses (the test below).
TEST(ExportLayout, DeepSpeedWithoutAPipelineWritesZeroTwoAndThree) {
  ParallelLayout l;
  l.t = 2, l.d = 4, l.p = 1, l.micro_batch = 2, l.microbatches = 8;
  Plan plan = plan_of({6}, 1, 4, 8, 2, ScheduleKind::OneFOneB);
  for (const auto& [sharding, stage] : {std::pair{Sharding::Zero2, 2}, std::pair{Sharding::Zero3, 3}}) {
    l.sharding = sharding;
    set_framework_overlap(Framework::DeepSpeed, false, false, l);
    plan.layout = layout_to_json(l);
    const ExportResult r = export_plan(plan, llm_profile(6), Framework::DeepSpeed);
    EXPECT_EQ(r.json["config"]["zero_optimization"]["stage"], stage);
    EXPECT_EQ(r.json["config"]["zero_optimization"]["overlap_comm"], sharding == Sharding::Zero3);  // DeepSpeed's defaults
    EXPECT_EQ(r.json["num_stages"], 1);
    EXPECT_HAS(r.text, "NUM_STAGES = 1: no pipeline");
  }
}

TEST(ExportLayout, DeepSpeedSaysZeroStageAndRefusesTheRest) {
  ParallelLayout l = base_layout();
  l.sequence_parallel = false, l.cp = 1, l.ep = 1, l.recompute = Recompute::Full;
  const ExportResult r = export_plan(plan_with(l), llm_profile(6), Framework::DeepSpeed);
  EXPECT_EQ(r.json["config"]["zero_optimization"]["stage"], 1);
  EXPECT_EQ(r.json["config"]["bf16"]["enabled"], true);
  EXPECT_EQ(r.json["activation_checkpoint_interval"], 1);  // each layer's input
  l.sharding = Sharding::None, l.precision = PrecisionRecipe::Fp32;
  const ExportResult none = export_plan(plan_with(l), llm_profile(6), Framework::DeepSpeed);
  EXPECT_EQ(none.json["config"]["zero_optimization"]["stage"], 0);
  EXPECT_FALSE(none.json["config"].contains("bf16"));

  const ParallelLayout ok = l;
  auto refused = [&](void (*edit)(ParallelLayout&), const std::string& part) {
    ParallelLayout bad = ok;
    edit(bad);
    EXPECT_HAS(refusal(bad, Framework::DeepSpeed), part);
  };
  refused([](ParallelLayout& b) { b.cp = 2; }, "layout.cp: --context-parallel-size: cp = 2: DeepSpeed's pipeline engine has no context parallelism");
  // AutoEP keeps experts whole (t = 1 only); the fixture's profile states t = 2.
  refused([](ParallelLayout& b) { b.ep = 2; }, "layout.ep: --expert-model-parallel-size: ep = 2 with t = 2: DeepSpeed keeps each expert whole");
  refused([](ParallelLayout& b) { b.sequence_parallel = true; }, "layout.sequence_parallel");
  refused([](ParallelLayout& b) { b.sharding = Sharding::Zero2; }, "layout.sharding: --sharding: \"zero-2\": DeepSpeed's PipelineEngine asserts");
  refused([](ParallelLayout& b) { b.sharding = Sharding::Zero3; }, "layout.sharding: --sharding: \"zero-3\"");
  refused([](ParallelLayout& b) { b.recompute = Recompute::Selective; }, "layout.recompute");
  refused([](ParallelLayout& b) { b.precision = PrecisionRecipe::Fp8Params; }, "layout.precision");
  refused([](ParallelLayout& b) { b.order = "tp-cp-ep-pp-dp"; }, "layout.order");
}

TEST(ExportLayout, TorchSaysTheMeshAndRefusesWhatItCannot) {
  ParallelLayout l = base_layout();
  l.ep = 1, l.recompute = Recompute::Full, l.sharding = Sharding::Zero3;
  const ExportResult r = export_plan(plan_with(l), llm_profile(6), Framework::Torch);
  // init_device_mesh is row-major: tp-cp-ep-dp-pp reversed, without ep.
  EXPECT_HAS(r.text, "MESH_DIM_NAMES = [\"pp\", \"dp\", \"cp\", \"tp\"]");
  EXPECT_HAS(r.text, "MESH_SHAPE = [2, 4, 2, 2]");
  EXPECT_HAS(r.text, "DATA_PARALLEL_SHARDING = \"fully_shard(reshard_after_forward=True)\"");
  // over d cp ranks, the group llm/memory.cpp shards by (cp ranks hold the same weights)
  EXPECT_HAS(r.text, "fully_shard: FSDP2; over (\"dp\", \"cp\") flattened");
  EXPECT_HAS(r.text, "ACTIVATION_CHECKPOINT = \"full\"");
  EXPECT_HAS(r.text, "SEQUENCE_PARALLEL = True");
  EXPECT_EQ(r.json["context_parallel_size"], 2);
  EXPECT_EQ(r.json["mesh_dim_names"], Json({"pp", "dp", "cp", "tp"}));
  EXPECT_EQ(r.json["mesh_shape"], Json({2, 4, 2, 2}));
  ParallelLayout bad = l;
  bad.recompute = Recompute::Selective;
  // torch's selective recompute is torchtitan's per-op SelectiveAC, which the export names
  EXPECT_EQ(refusal(bad, Framework::Torch), "(exported)");
  bad = l, bad.ep = 2;  // torchtitan's experts are whole on each rank: t = 1 only
  EXPECT_HAS(refusal(bad, Framework::Torch), "layout.ep: --expert-model-parallel-size: ep = 2 with t = 2: torch (torchtitan) keeps each expert whole");
  bad = l, bad.precision = PrecisionRecipe::Fp8Params;
  EXPECT_HAS(refusal(bad, Framework::Torch), "layout.precision");
}

// Expert parallelism at t = 1, as torchtitan and DeepSpeed's AutoEP take it (the fixture's
// plan, 2 positions x 4 replicas, on a profile stating t = 1; cp 2, so 16 GPUs).
namespace {

ExportResult export_t1(const ParallelLayout& l, Framework target) {
  Profile profile = llm_profile(6);
  for (LayerProfile& layer : profile.layers) layer.spec["tensor_parallel"] = 1;
  return export_plan(plan_with(l), profile, target);
}

std::string refusal_t1(const ParallelLayout& l, Framework target) {
  try {
    export_t1(l, target);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(exported)";
}

}  // namespace

TEST(ExportLayout, TorchWritesExpertParallelAsTorchtitansMeshes) {
  ParallelLayout l = base_layout();
  l.t = 1, l.sequence_parallel = false, l.ep = 4, l.recompute = Recompute::None, l.sharding = Sharding::Zero3;
  const ExportResult r = export_t1(l, Framework::Torch);
  // FSDP2: dp_shard = d = 4, dp_replicate 1; efsdp = dp_shard cp tp / ep = 4 x 2 / 4 = 2, the
  // experts' sharding group llm/memory.cpp counts (d cp / ep); ep the fastest ranks: rank 0's ep
  // group is ranks 0..3, Megatron-Core's expert RankGenerator's too (tp-ep-dp-pp, ep stride t = 1).
  EXPECT_HAS(r.text, "EXPERT_PARALLEL_SIZE = 4  # experts / EXPERT_PARALLEL_SIZE per rank, each whole\n");
  EXPECT_HAS(r.text, "PARALLEL_DIMS = dict(dp_replicate=1, dp_shard=4, cp=2, tp=1, pp=2, ep=4)");
  EXPECT_HAS(r.text, "EXPERT_MESH_DIM_NAMES = [\"pp\", \"dp_replicate\", \"efsdp\", \"ep\"]");
  EXPECT_HAS(r.text, "EXPERT_MESH_SHAPE = [2, 1, 2, 4]");
  EXPECT_EQ(r.json["expert_mesh_shape"], Json({2, 1, 2, 4}));
  EXPECT_EQ(r.json["groups"]["ep"]["first_group"], Json({0, 1, 2, 3}));
  // DDP (sharding none) is torchtitan's only at cp = 1 (it shards over the cp ranks: the
  // framework's runtime_refusal), and there dp_shard * cp * tp = 1 leaves no ranks for ep.
  l.sharding = Sharding::None, l.ep = 2;
  EXPECT_HAS(refusal_t1(l, Framework::Torch),
             "layout.sharding: --sharding: none with --context-parallel-size 2: torchtitan shards the weights over the "
             "context-parallel ranks");
  l.cp = 1;
  EXPECT_HAS(refusal_t1(l, Framework::Torch),
             "layout.ep: --expert-model-parallel-size: ep = 2 does not divide torchtitan's dp_shard * cp * tp = 1 * 1 * 1");
  l.cp = 2, l.ep = 4;
  l.sharding = Sharding::Zero2, l.order = "tp-cp-ep-pp-dp";  // not torchtitan's (pp, dp_replicate, dp_shard, cp, tp)
  EXPECT_HAS(refusal_t1(l, Framework::Torch), "layout.order: --order: \"tp-cp-ep-pp-dp\" with ep = 4: torchtitan's ParallelDims");
  l.order = "tp-cp-ep-dp-pp", l.ep = 1;  // no expert parallelism: no expert constants
  EXPECT_FALSE(export_t1(l, Framework::Torch).json.contains("expert_parallel_size"));
}

TEST(ExportLayout, DeepSpeedWritesExpertParallelAsAutoEp) {
  ParallelLayout l = base_layout();
  l.t = 1, l.sequence_parallel = false, l.cp = 1, l.d = 8, l.p = 2, l.ep = 2, l.recompute = Recompute::Full;
  Profile profile = llm_profile(6);
  for (LayerProfile& layer : profile.layers) layer.spec["tensor_parallel"] = 1;
  Plan plan = plan_of({3, 3}, 2, 8, 8, 2, ScheduleKind::OneFOneB);
  plan.layout = layout_to_json(l);
  // ds_config's "expert_parallel" section, as deepspeed/module_inject/auto_ep_config.py parses it.
  const Json config = export_plan(plan, profile, Framework::DeepSpeed).json["config"];
  EXPECT_EQ(config["expert_parallel"], Json({{"enabled", true}, {"autoep_size", 2}}));
  EXPECT_EQ(config["zero_optimization"]["stage"], 1);
  l.ep = 1;
  plan.layout = layout_to_json(l);
  EXPECT_FALSE(export_plan(plan, profile, Framework::DeepSpeed).json["config"].contains("expert_parallel"));
}

// llm/profile_layers.h: the model a profile's specs state, as TransformerShape.
TEST(LlmShape, HfProfilesGiveBackTheirConfigsShape) {
  // Llama-3-8B's config.json: 32 layers, h 4096, 32 heads, 8 KV heads, FFN 14336,
  // vocabulary 128256, padded at t = 8 to the next multiple of 128 x 8 = 1024: 129024 (as
  // Megatron pads it); untied, SwiGLU, RMSNorm, no biases.
  const HfModel m = load_hf_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/hf/llama-3-8b.json");
  HfProfileOptions o;
  o.sequence = 4096;
  const Profile p = make_hf_profile(m, load_gpu_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/h100-sxm.json"), o);
  const std::optional<TransformerShape> s = transformer_shape_of(p, 8);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->layers, 32);
  EXPECT_EQ(s->hidden, 4096);
  EXPECT_EQ(s->heads, 32);
  EXPECT_EQ(s->kv_heads, 8);
  EXPECT_EQ(s->ffn_hidden, 14336);
  EXPECT_EQ(s->vocabulary, 129024);
  EXPECT_EQ(s->sequence, 4096);
  EXPECT_TRUE(s->swiglu && s->rms_norm);
  EXPECT_FALSE(s->tied_embeddings || s->bias_linear || s->qkv_bias || s->output_bias || s->mlp_bias);
  EXPECT_FALSE(s->learned_positions);  // rotary positions
  EXPECT_EQ(s->kv_channels, 0);  // head_dim = h / heads: Megatron's default
  EXPECT_EQ(s->experts, 0);
}

TEST(LlmShape, GptProfilesUseMegatronsGptDefaults) {
  // gpt-1.3b: 24 blocks of h 2048 and 16 heads, s 2048, vocabulary 50257 -> 50304 at t = 1
  // (multiple of 128), 50432 at t = 2 (of 256); 4 h FFN, LayerNorm, tied, biases.
  const Profile p = load_profile(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpt-1.3b-h200.json");
  const std::optional<TransformerShape> s = transformer_shape_of(p, 1);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->layers, 24);
  EXPECT_EQ(s->hidden, 2048);
  EXPECT_EQ(s->heads, 16);
  EXPECT_EQ(s->sequence, 2048);
  EXPECT_EQ(s->vocabulary, 50304);
  EXPECT_EQ(transformer_shape_of(p, 2)->vocabulary, 50432);
  EXPECT_TRUE(s->tied_embeddings && s->bias_linear);
  EXPECT_FALSE(s->swiglu || s->rms_norm);
}

TEST(LlmShape, ProfilesWithoutTheShapeSayWhy) {
  std::string why;
  Profile p = llm_profile(4);  // hf_decoder_layer specs without heads
  EXPECT_FALSE(transformer_shape_of(p, 1, &why).has_value());
  EXPECT_HAS(why, "test.json: the specs do not state hidden, heads, sequence and vocabulary");
  p.layers[1].spec["type"] = "conv";
  EXPECT_FALSE(transformer_shape_of(p, 1, &why).has_value());
  EXPECT_HAS(why, "layer \"model.layers.0\" is not a decoder layer");
}
