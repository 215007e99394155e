// `profile synth --hf-config` -> `plan` -> `export` through the pipescope command: exit
// codes, the files written, and the generated Python files run by the project's Python
// (.venv at the repository root, scripts/install-deps.sh) against the real torch 2.13
// and DeepSpeed 0.19.8. Only what needs a process group is stood in for: torch's
// Pipe.build_stage (a PipelineStage joins its group) and DeepSpeed's
// PipelineModule.__init__ up to its _partition_layers call (it creates process groups).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/source_paths.h"

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string out;
};

Result shell(const std::string& cmd) {
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

Result run(const std::string& args) { return shell(std::string(PIPESCOPE_BINARY) + " " + args); }

std::string src(const std::string& rel) { return std::string(PIPESCOPE_SOURCE_DIR) + "/" + rel; }

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("pipescope_interop_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// A two-position 1F1B plan of llama-3-8b's 34 profile layers: 17 + 17.
std::string two_stage_plan(const std::string& profile, const std::string& schedule = "1f1b") {
  return R"({"format": "pipescope.plan", "version": 1, "profile": ")" + profile +
         R"(", "batch_size": 16, "microbatches": 8, "schedule": {"kind": ")" + schedule +
         R"(", "chunks": 1}, "recompute": false,
            "stages": [{"layers": [0, 17], "devices": [0]}, {"layers": [17, 34], "devices": [1]}]})";
}

// The project's Python environment; tests that run exported files skip, naming it, without it,
// and under PIPESCOPE_SKIP_PYTHON (scripts/sanitize.sh: their time is Python's, which the
// sanitizers do not instrument; the Release ctest and pytest run them).
std::string venv_python() { return src(".venv/bin/python"); }
bool have_venv() { return fs::exists(venv_python()); }
#define SKIP_WITHOUT_VENV()                                                                                    \
  if (std::getenv("PIPESCOPE_SKIP_PYTHON")) GTEST_SKIP() << "PIPESCOPE_SKIP_PYTHON is set: the Python side runs in " \
                                                            "the Release ctest and pytest";                    \
  if (!have_venv()) GTEST_SKIP() << venv_python() << " is missing: run scripts/install-deps.sh to make the Python environment"

}  // namespace

TEST(InteropCli, HfSynthWritesAProfileAndTheGroupHardware) {
  fs::path d = temp_dir();
  Result r = run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") +
                 " --gpu h100-sxm --seq 4096 --dtype bf16 --tensor-parallel 2 --gpus 16 --hardware-output " +
                 (d / "hw.json").string() + " -o " + (d / "p.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto p = nlohmann::json::parse(std::ifstream(d / "p.json"));
  EXPECT_EQ(p["layers"].size(), 34u);
  EXPECT_EQ(p["layers"][1]["spec"]["tensor_parallel"], 2);
  auto hw = nlohmann::json::parse(std::ifstream(d / "hw.json"));
  EXPECT_EQ(hw["devices"], 8);  // 16 GPUs / 2
}

TEST(InteropCli, HfSynthRefusalsExitTwoNamingTheField) {
  fs::path d = temp_dir();
  write(d / "gpt2.json", R"({"model_type": "gpt2", "n_embd": 768})");
  Result unknown = run("profile synth --hf-config " + (d / "gpt2.json").string() + " --gpu h100-sxm");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.out.find("model_type"), std::string::npos) << unknown.out;
  write(d / "nolayers.json", R"({"model_type": "mistral", "hidden_size": 64, "intermediate_size": 128,
                                  "num_attention_heads": 4, "vocab_size": 100})");
  Result missing = run("profile synth --hf-config " + (d / "nolayers.json").string() + " --gpu h100-sxm");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("num_hidden_layers"), std::string::npos) << missing.out;
  Result gpu = run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu v100");
  EXPECT_EQ(gpu.code, 2);
  EXPECT_NE(gpu.out.find("v100"), std::string::npos) << gpu.out;
  // What a GPU reaches is its file's curve, and the cost model counts 2-byte activations.
  Result efficiency = run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu h200 --efficiency 0.5");
  EXPECT_EQ(efficiency.code, 2);
  EXPECT_NE(efficiency.out.find("--efficiency"), std::string::npos) << efficiency.out;
  Result fp32 = run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu h200 --dtype fp32");
  EXPECT_EQ(fp32.code, 2);
  EXPECT_NE(fp32.out.find("--dtype"), std::string::npos) << fp32.out;
}

TEST(InteropCli, ExportMegatronAndItsRefusal) {
  fs::path d = temp_dir();
  ASSERT_EQ(run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu h200 --seq 2048 -o " +
                (d / "p.json").string()).code, 0);
  write(d / "plan.json", two_stage_plan("p.json"));
  Result r = run("export --plan " + (d / "plan.json").string() + " --to megatron");
  ASSERT_EQ(r.code, 0) << r.out;
  // 16 decoder layers + embedding | 16 + head: an even split.
  EXPECT_NE(r.out.find("--pipeline-model-parallel-size 2 \\\n--num-layers 32 \\\n--seq-length 2048 \\\n"
                       "--micro-batch-size 2 \\\n--global-batch-size 16 \\\n--bf16\n"),
            std::string::npos) << r.out;
  write(d / "gpipe.json", two_stage_plan("p.json", "gpipe"));
  Result no = run("export --plan " + (d / "gpipe.json").string() + " --to megatron");
  EXPECT_EQ(no.code, 2);
  EXPECT_NE(no.out.find("GPipe"), std::string::npos) << no.out;
  Result bad = run("export --plan " + (d / "plan.json").string() + " --to jax");
  EXPECT_EQ(bad.code, 2);
  // A plan predicted with batched p2p (torch's, the zero-bubble runtime's): Megatron-LM has
  // no such mode; its 1f1b blocks, and the export says what it runs.
  std::string batched = two_stage_plan("p.json");
  batched.insert(batched.find("\"stages\""), "\"p2p\": \"batched\", ");
  write(d / "batched.json", batched);
  Result text = run("export --plan " + (d / "batched.json").string() + " --to megatron");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("# p2p: the plan was predicted with batched p2p; Megatron-LM's 1f1b schedule runs blocking "
                          "(predict that with --p2p blocking)"),
            std::string::npos) << text.out;
  Result json = run("export --plan " + (d / "batched.json").string() + " --to megatron --json");
  ASSERT_EQ(json.code, 0) << json.out;
  EXPECT_EQ(nlohmann::json::parse(json.out)["p2p"], "blocking") << json.out;
}

TEST(InteropCli, LayoutRefusalsExitTwoNamingTheField) {
  // A v2 plan whose layout asks for what the framework lacks: exit 2, "layout.<field>".
  fs::path d = temp_dir();
  ASSERT_EQ(run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu h200 --seq 2048 -o " +
                (d / "p.json").string()).code, 0);
  std::string plan = two_stage_plan("p.json");
  plan.replace(plan.find("\"version\": 1"), 12, "\"version\": 2");
  auto with_layout = [&](const std::string& layout) {
    std::string text = plan.substr(0, plan.rfind('}')) + ", \"layout\": {\"p\": 2, \"micro_batch\": 2, \"microbatches\": 8, ";
    text += layout;
    text += "}}";
    write(d / "layout.json", text);
    return (d / "layout.json").string();
  };
  Result ok = run("export --plan " + with_layout(R"("sharding": "distributed-optimizer")") + " --to megatron");
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("--use-distributed-optimizer"), std::string::npos) << ok.out;
  struct Case {
    const char* layout;
    const char* target;
    const char* names;
  };
  const Case cases[] = {
      {R"("sharding": "zero-3")", "megatron", "layout.sharding"},
      {R"("order": "dp-tp-cp-ep-pp")", "megatron", "layout.order"},
      {R"("cp": 2)", "deepspeed", "layout.cp"},
      {R"("sharding": "zero-2")", "deepspeed", "layout.sharding"},
      {R"("precision": "fp8-params")", "torch", "layout.precision"},
      {R"("v": 2)", "megatron", "layout.v: 2, but the plan has chunks per position 1"},
      {R"("schedule": "gpipe")", "torch", "layout.schedule: gpipe, but the plan's schedule is 1f1b"},
  };
  for (const Case& c : cases) {
    Result r = run("export --plan " + with_layout(c.layout) + " --to " + c.target);
    EXPECT_EQ(r.code, 2) << c.layout << ": " << r.out;
    EXPECT_NE(r.out.find(c.names), std::string::npos) << r.out;
  }
}

TEST(InteropCli, MegatronFlagsAreShellWords) {
  // The flags (comments dropped) pasted after a command give bash exactly the words of
  // the JSON flag list: the layout's '|' and '*' neither pipe nor glob.
  fs::path d = temp_dir();
  ASSERT_EQ(run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu h200 -o " + (d / "p.json").string()).code, 0);
  write(d / "uneven.json", R"({"format": "pipescope.plan", "version": 1, "profile": "p.json", "batch_size": 16,
      "microbatches": 8, "schedule": {"kind": "1f1b", "chunks": 1}, "recompute": false,
      "stages": [{"layers": [0, 5], "devices": [0]}, {"layers": [5, 20], "devices": [1]}, {"layers": [20, 25], "devices": [2]},
                 {"layers": [25, 34], "devices": [3]}]})");
  Result flags = run("export --plan " + (d / "uneven.json").string() + " --to megatron -o " + (d / "flags.txt").string());
  ASSERT_EQ(flags.code, 0) << flags.out;
  Result json = run("export --plan " + (d / "uneven.json").string() + " --to megatron --json");
  ASSERT_EQ(json.code, 0) << json.out;
  std::string expected;
  const nlohmann::json parsed = nlohmann::json::parse(json.out);
  for (const auto& f : parsed["flags"]) {
    for (const auto& word : f) expected += word.get<std::string>() + "\n";
  }
  EXPECT_NE(expected.find("--pipeline-model-parallel-layout\nEt*4|t*15|t*5|t*8L\n"), std::string::npos) << expected;
  // A script "set -- <the flags>; printf one word per line", run by bash.
  std::ifstream in(d / "flags.txt");
  std::string script = "set -- \\\n";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) != 0) script += line + "\n";
  }
  write(d / "args.sh", script + "printf '%s\\n' \"$@\"\n");
  Result words = shell("bash " + (d / "args.sh").string());
  ASSERT_EQ(words.code, 0) << words.out;
  EXPECT_EQ(words.out, expected);
}

TEST(InteropCli, TorchFileBuildsTheScheduleItNames) {
  SKIP_WITHOUT_VENV();
  fs::path d = temp_dir();
  ASSERT_EQ(run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu h200 -o " + (d / "p.json").string()).code, 0);
  write(d / "plan.json", two_stage_plan("p.json"));
  ASSERT_EQ(run("export --plan " + (d / "plan.json").string() + " --to torch -o " + (d / "pp_setup.py").string()).code, 0);
  // A tiny module with the profile's layer names (model.embed_tokens, model.layers.0..31,
  // lm_head), split by torch's own pipeline() at the exported split point; build_stage
  // (which would join the pipeline's process group) is replaced by a stage that has
  // what the schedule classes read; the schedule class is torch's own.
  write(d / "harness.py", R"(
import torch
from torch import nn
from torch.distributed.pipelining import _IR

class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(50, 8)
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(32))
        self.norm = nn.LayerNorm(8)

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Inner()
        self.lm_head = nn.Linear(8, 50)
    def forward(self, ids):
        h = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            h = layer(h)
        return self.lm_head(self.model.norm(h))

built = {}
class Stage:
    def __init__(self, pipe, index, group):
        self.stage_index, self.num_stages = index, pipe.num_stages
        self.group_size, self.group_rank = group.size(), group.rank()
        self.is_first, self.is_last = index == 0, index == pipe.num_stages - 1
        self.submod = pipe.get_stage_module(index)
def build_stage(self, stage_index, device, group=None):
    built.setdefault("pipe", self)
    built.setdefault("stages", []).append(stage_index)
    return Stage(self, stage_index, group)
_IR.Pipe.build_stage = build_stage

class Group:  # pipeline rank 1 of 2
    def rank(self): return 1
    def size(self): return 2

def build(pp_setup):
    return pp_setup.build_schedule(Model(), torch.zeros(2, 4, dtype=torch.long), None, torch.device("cpu"), Group())
)");
  write(d / "check.py", R"(
import harness, pp_setup
from torch.distributed.pipelining import schedules
sched = harness.build(pp_setup)
pipe = harness.built["pipe"]
assert pipe.num_stages == 2, pipe.num_stages
names = [n for n, _ in pipe.get_stage_module(1).named_parameters()]
assert names[0] == "model.layers.16.weight" and names[-1] == "lm_head.bias", names  # the cut is before layer 16
assert harness.built["stages"] == [1], harness.built
assert type(sched) is schedules.Schedule1F1B and sched._n_microbatches == 8, sched
print("ok")
)");
  const std::string python = "cd " + d.string() + " && PYTHONPATH=" + d.string() + " " + venv_python() + " ";
  Result r = shell(python + "check.py");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
  // --torch-csv: pipescope's op order through torch's _PipelineScheduleRuntime, whose
  // _load_csv validates it (_validate_schedule) and adds the sends and receives; rank 1
  // of 1F1B with K = 2, M = 8 runs F0 B0 F1 B1 ... (one warm-up forward).
  ASSERT_EQ(run("export --plan " + (d / "plan.json").string() + " --to torch --torch-csv -o " + (d / "pp_setup.py").string()).code, 0);
  write(d / "check_csv.py", R"(
import harness, pp_setup
from torch.distributed.pipelining import schedules
sched = harness.build(pp_setup)
assert type(sched) is schedules._PipelineScheduleRuntime and sched._n_microbatches == 8, sched
order = {r: [str(a) for a in acts if a is not None] for r, acts in sched.pipeline_order.items()}
assert len(order) == 2, order
assert order[1][:4] == ["1F0", "1B0", "1F1", "1B1"], order[1]
assert order[0][:3] == ["0F0", "0F1", "0B0"], order[0]
assert sched.stage_index_to_group_rank == {0: 0, 1: 1}, sched.stage_index_to_group_rank
assert any("RECV_F" in str(a) for a in sched.pipeline_order_with_comms[1]), "lowered with communication"
print("ok")
)");
  Result csv = shell(python + "check_csv.py");
  EXPECT_EQ(csv.code, 0) << csv.out;
  EXPECT_NE(csv.out.find("ok"), std::string::npos) << csv.out;
  Result plain = shell(venv_python() + " -I " + (d / "pp_setup.py").string());  // no torch needed to print the plan
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(nlohmann::json::parse(plain.out)["schedule_class"], "_PipelineScheduleRuntime");
}

TEST(InteropCli, DeepSpeedFileInstallsTheParts) {
  SKIP_WITHOUT_VENV();
  fs::path d = temp_dir();
  ASSERT_EQ(run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu h200 -o " + (d / "p.json").string()).code, 0);
  write(d / "plan.json", R"({"format": "pipescope.plan", "version": 1, "profile": "p.json", "batch_size": 16,
      "microbatches": 8, "schedule": {"kind": "1f1b", "chunks": 1}, "recompute": true,
      "stages": [{"layers": [0, 20], "devices": [0]}, {"layers": [20, 34], "devices": [1]}]})");
  ASSERT_EQ(run("export --plan " + (d / "plan.json").string() + " --to deepspeed -o " + (d / "ds_setup.py").string()).code, 0);
  // DeepSpeed's own PipelineModule, topology and _partition_layers; only __init__'s
  // process-group part is replaced (global rank 1 of the 2-stage topology).
  write(d / "check.py", R"(
import torch
from deepspeed.runtime.pipe.module import PipelineModule
import ds_setup

def init(self, layers, topology=None, loss_fn=None, partition_method="parameters", activation_checkpoint_interval=0, **kw):
    torch.nn.Module.__init__(self)
    self.loss_fn, self.global_rank, self._topo = loss_fn, 1, topology
    self.num_stages = topology.get_dim("pipe")
    self._layer_specs = list(layers)
    self._local_start, self._local_stop = 0, None
    self.interval = activation_checkpoint_interval
    self._partition_layers(method=partition_method)
PipelineModule.__init__ = init

m = ds_setup.make_pipeline_module([torch.nn.Identity() for _ in range(34)], loss_fn=None)
assert m.parts == [0, 20, 34], m.parts
assert (m._local_start, m._local_stop) == (20, 34), (m._local_start, m._local_stop)
assert m.interval == 20, m.interval
assert (m._topo.get_dim("pipe"), m._topo.get_dim("data"), m._topo.get_dim("model")) == (2, 1, 1)
c = ds_setup.DS_CONFIG
assert c["train_batch_size"] == c["train_micro_batch_size_per_gpu"] * c["gradient_accumulation_steps"] * 1, c
print("ok")
)");
  Result r = shell("cd " + d.string() + " && PYTHONPATH=" + d.string() + " " + venv_python() + " check.py");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
}
