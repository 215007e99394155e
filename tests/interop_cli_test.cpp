// `profile synth --hf-config` -> `plan` -> `export` through the pipescope command: exit
// codes, the files written, and the generated Python files run by /usr/bin/python3
// (against stand-ins for torch.distributed.pipelining and deepspeed that record the
// calls, since neither PyTorch 2.9 nor DeepSpeed is installed here).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

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

bool have_python() { return fs::exists("/usr/bin/python3"); }

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
  if (!have_python()) GTEST_SKIP() << "no /usr/bin/python3";
  fs::path d = temp_dir();
  ASSERT_EQ(run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu h200 -o " + (d / "p.json").string()).code, 0);
  write(d / "plan.json", two_stage_plan("p.json"));
  ASSERT_EQ(run("export --plan " + (d / "plan.json").string() + " --to torch -o " + (d / "pp_setup.py").string()).code, 0);
  // Stand-ins with the names and signatures of PyTorch 2.9's pipelining API.
  fs::create_directories(d / "stub/torch/distributed/pipelining");
  write(d / "stub/torch/__init__.py", "");
  write(d / "stub/torch/distributed/__init__.py", "");
  write(d / "stub/torch/distributed/pipelining/__init__.py", R"(
import enum
calls = {}
class SplitPoint(enum.Enum):
    BEGINNING = 1
    END = 2
class _Pipe:
    def build_stage(self, stage_index, device, group=None):
        calls.setdefault("stages", []).append(stage_index)
        return ("stage", stage_index)
def pipeline(module, mb_args, mb_kwargs=None, split_spec=None, split_policy=None):
    calls["split_spec"] = split_spec
    return _Pipe()
)");
  write(d / "stub/torch/distributed/pipelining/schedules.py", R"(
from . import calls
class _PipelineScheduleRuntime:
    def __init__(self, stages, n_microbatches, loss_fn=None, args_chunk_spec=None, kwargs_chunk_spec=None,
                 output_merge_spec=None, use_full_backward=None, scale_grads=True, backward_requires_autograd=True):
        calls["schedule"] = ("_PipelineScheduleRuntime", stages, n_microbatches)
    def _load_csv(self, filename, format="compute_only"):
        import csv
        with open(filename, newline="") as f:
            calls["csv"] = [row for row in csv.reader(f)]
class Schedule1F1B:  # PipelineScheduleSingle's signature in PyTorch 2.9
    def __init__(self, stage, n_microbatches, loss_fn=None, args_chunk_spec=None, kwargs_chunk_spec=None,
                 output_merge_spec=None, scale_grads=True):
        calls["schedule"] = ("Schedule1F1B", stage, n_microbatches)
)");
  write(d / "check.py", R"(
import json, pp_setup
from torch.distributed.pipelining import calls, SplitPoint
class Group:
    def rank(self): return 1
pp_setup.build_schedule("model", "mb", None, "cuda:1", Group())
assert calls["split_spec"] == {"model.layers.16": SplitPoint.BEGINNING}, calls
assert calls["stages"] == [1], calls
assert calls["schedule"] == ("Schedule1F1B", ("stage", 1), 8), calls
print("ok")
)");
  Result r = shell("cd " + d.string() + " && PYTHONPATH=" + (d / "stub").string() + ":" + d.string() + " /usr/bin/python3 check.py");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
  // --torch-csv: pipescope's op order through _PipelineScheduleRuntime; rank 1 of 1F1B
  // with K = 2, M = 8 runs F0 B0 F1 B1 ... (one warm-up forward).
  ASSERT_EQ(run("export --plan " + (d / "plan.json").string() + " --to torch --torch-csv -o " + (d / "pp_setup.py").string()).code, 0);
  write(d / "check_csv.py", R"(
import pp_setup
from torch.distributed.pipelining import calls
class Group:
    def rank(self): return 1
pp_setup.build_schedule("model", "mb", None, "cuda:1", Group())
assert calls["schedule"] == ("_PipelineScheduleRuntime", [("stage", 1)], 8), calls
assert len(calls["csv"]) == 2, calls["csv"]
assert calls["csv"][1][:4] == ["1F0", "1B0", "1F1", "1B1"], calls["csv"][1]
assert calls["csv"][0][:3] == ["0F0", "0F1", "0B0"], calls["csv"][0]
print("ok")
)");
  Result csv = shell("cd " + d.string() + " && PYTHONPATH=" + (d / "stub").string() + ":" + d.string() + " /usr/bin/python3 check_csv.py");
  EXPECT_EQ(csv.code, 0) << csv.out;
  Result plain = shell("/usr/bin/python3 -I " + (d / "pp_setup.py").string());  // no torch needed to print the plan
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(nlohmann::json::parse(plain.out)["schedule_class"], "_PipelineScheduleRuntime");
}

TEST(InteropCli, DeepSpeedFileInstallsTheParts) {
  if (!have_python()) GTEST_SKIP() << "no /usr/bin/python3";
  fs::path d = temp_dir();
  ASSERT_EQ(run("profile synth --hf-config " + src("profiles/hf/llama-3-8b.json") + " --gpu h200 -o " + (d / "p.json").string()).code, 0);
  write(d / "plan.json", R"({"format": "pipescope.plan", "version": 1, "profile": "p.json", "batch_size": 16,
      "microbatches": 8, "schedule": {"kind": "1f1b", "chunks": 1}, "recompute": true,
      "stages": [{"layers": [0, 20], "devices": [0]}, {"layers": [20, 34], "devices": [1]}]})");
  ASSERT_EQ(run("export --plan " + (d / "plan.json").string() + " --to deepspeed -o " + (d / "ds_setup.py").string()).code, 0);
  // Stand-ins with DeepSpeed's names: PipelineModule.__init__ calls
  // self._partition_layers(method=partition_method) and reads the topology's pipe axis.
  fs::create_directories(d / "stub/deepspeed/runtime/pipe");
  write(d / "stub/deepspeed/__init__.py", "");
  write(d / "stub/deepspeed/runtime/__init__.py", "");
  write(d / "stub/deepspeed/runtime/pipe/__init__.py", "");
  write(d / "stub/deepspeed/runtime/pipe/topology.py", R"(
class _Coord:
    pipe = 1
class PipeModelDataParallelTopology:
    def __init__(self, num_pp, num_mp, num_dp):
        self.dims = (num_pp, num_mp, num_dp)
    def get_coord(self, rank):
        return _Coord()
)");
  write(d / "stub/deepspeed/pipe.py", R"(
class PipelineModule:  # the signature of DeepSpeed 0.19's deepspeed/runtime/pipe/module.py
    def __init__(self, layers, num_stages=None, topology=None, loss_fn=None, seed_layers=False, seed_fn=None,
                 base_seed=1234, partition_method="parameters", activation_checkpoint_interval=0,
                 activation_checkpoint_func=None, checkpointable_layers=None, dynamic_shape=False):
        self._topo, self.global_rank = topology, 1
        self.interval = activation_checkpoint_interval
        self._partition_layers(method=partition_method)
    def _partition_layers(self, method="uniform"):
        raise NotImplementedError(method)
    def _set_bounds(self, start=None, stop=None):
        self.bounds = (start, stop)
)");
  write(d / "check.py", R"(
import ds_setup
m = ds_setup.make_pipeline_module(list(range(34)), loss_fn=None)
assert m.parts == [0, 20, 34], m.parts
assert m.bounds == (20, 34), m.bounds
assert m.interval == 20, m.interval
assert m._topo.dims == (2, 1, 1), m._topo.dims
c = ds_setup.DS_CONFIG
assert c["train_batch_size"] == c["train_micro_batch_size_per_gpu"] * c["gradient_accumulation_steps"] * 1, c
print("ok")
)");
  Result r = shell("cd " + d.string() + " && PYTHONPATH=" + (d / "stub").string() + ":" + d.string() + " /usr/bin/python3 check.py");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
}
