// The LLM-scale commands under random flags (issue 40): 500 jobs drawn from a fixed seed,
// each flag within its range or, one time in twelve, just outside it or absurd (negative,
// 2^31 - 1, the limit + 1, NaN, infinity, an empty string, a word). Every job must exit 0
// or 2 within 10 s: never 1 (an internal error), 124 (a hang) or a signal. A plan written
// with --out must re-read to the same step (simulate --plan gives the step_ns llm-plan
// printed) and export to each framework or be refused with exit 2 leaving no file (an
// export to the framework the job was planned for states the step llm-plan printed), and
// a refused job leaves nothing in its folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/reliability/reliability_util.h"

namespace pipescope {
namespace {

using testing::run_pipescope;
using testing::TempDir;

constexpr uint64_t kSeed = 40;  // issue 40
constexpr int kJobs = 500;

class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(int one_in) { return std::uniform_int_distribution<int>(1, one_in)(rng_) == 1; }
  template <typename T>
  const T& of(const std::vector<T>& values) {
    return values[std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng_)];
  }
  // ` FLAG VALUE`: a value from `good`, or one time in twelve a hostile one (with `limit`,
  // the largest value the flag takes, its successor among them).
  std::string flag(const std::string& name, const std::vector<std::string>& good, long long limit = 0) {
    std::vector<std::string> bad = {"-1", "0", "-2147483648", "2147483647", "nan", "inf", "''", "abc", "1e9"};
    if (limit > 0) bad.push_back(std::to_string(limit + 1));
    return " " + name + " " + (chance(12) ? of(bad) : of(good));
  }

 private:
  std::mt19937_64 rng_;
};

struct RandomJob {
  std::string command;  // llm-plan, llm-time or llm-memory
  std::string args;
};

// A small model (a job times in milliseconds), on 1 to 16 GPUs; a few huge values come
// from Draw::flag's hostile ones.
std::string model_flags(Draw& d) {
  if (d.chance(10)) return d.flag("--hf-config", {std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/hf/llama-3-8b.json"}) +
                           d.flag("--seq-length", {"1024", "4096"}, 1 << 24);
  return d.flag("--num-layers", {"2", "4", "6", "8"}, 1000000) + d.flag("--hidden-size", {"128", "256", "512"}, 1 << 24) +
         d.flag("--num-attention-heads", {"2", "4", "8"}, 1 << 16) + d.flag("--seq-length", {"128", "512"}, 1 << 24) +
         d.flag("--vocab-size", {"1000", "5000"}, 1 << 30) +
         (d.chance(4) ? d.flag("--num-query-groups", {"1", "2"}, 1 << 16) : "") +
         (d.chance(4) ? d.flag("--ffn-hidden-size", {"512", "1024"}, 1 << 24) : "") +
         (d.chance(6) ? d.flag("--kv-channels", {"32", "64"}, 1 << 24) : "") +
         (d.chance(5) ? " --num-experts 4 --moe-router-topk 2" : "") +
         (d.chance(8) ? d.flag("--make-vocab-size-divisible-by", {"64", "128"}, 1 << 16) : "");
}

std::string shared_layout_flags(Draw& d) {
  std::string a = d.flag("--framework", {"megatron", "torch", "deepspeed"});
  if (d.chance(3)) a += d.flag("--pipeline-model-parallel-size", {"1", "2", "4"}, 1 << 20);
  if (d.chance(3)) a += d.flag("--tensor-model-parallel-size", {"1", "2"}, 1 << 20);
  if (d.chance(5)) a += d.flag("--context-parallel-size", {"1", "2"}, 1 << 20);
  if (d.chance(3)) a += d.flag("--micro-batch-size", {"1", "2", "4"}, 1 << 30);
  if (d.chance(6)) a += d.flag("--order", {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp", "dp-tp-pp-cp-ep"});
  if (d.chance(6)) a += d.flag("--precision", {"bf16-mixed", "fp32", "fp8-params"});
  return a;
}

RandomJob draw_job(Draw& d) {
  const int kind = d.uniform(0, 9);
  if (kind < 5) {  // the search: its pins, limits and memory
    std::string a = model_flags(d) + " --gpu h100-sxm" + d.flag("--gpus", {"1", "2", "4", "8", "16"}, 1 << 20) +
                    d.flag("--global-batch-size", {"4", "8", "16"}, 1 << 30) + shared_layout_flags(d);
    if (d.chance(4)) a += d.flag("--virtual-pipeline-size", {"0", "1", "2"}, 64);
    if (d.chance(4)) a += d.flag("--max-micro-batch-size", {"1", "2", "8"}, 1 << 30);
    if (d.chance(4)) a += d.flag("--max-virtual-stages", {"1", "2", "4"}, 64);
    if (d.chance(4)) a += d.flag("--memory-gb", {"0", "80", "0.5"});
    if (d.chance(4)) a += d.flag("--memory-headroom", {"1", "6"});
    if (d.chance(4)) a += d.flag("--top", {"1", "3"});
    return {"llm-plan", a + " --json --out plan.json"};
  }
  std::string a = model_flags(d) + shared_layout_flags(d);
  if (d.chance(4)) a += d.flag("--num-virtual-stages-per-pipeline-rank", {"2", "4"}, 64);
  if (d.chance(4)) a += d.flag("--sharding", {"none", "distributed-optimizer", "zero-1", "zero-2", "zero-3", "fsdp"});
  if (d.chance(6)) a += " --use-distributed-optimizer";
  if (d.chance(4)) a += d.flag("--recompute-granularity", {"none", "selective", "full"});
  if (kind < 8) {
    if (d.chance(2)) a += d.flag("--gpus", {"0", "2", "4", "8", "16384"}, 1 << 20);
    if (d.chance(2)) a += d.flag("--global-batch-size", {"8", "16", "4096"}, 1 << 30);
    return {"llm-time", " --gpu h100-sxm" + a + " --json"};
  }
  return {"llm-memory",
          a + d.flag("--gpus", {"1", "2", "4", "8", "16384"}, 1 << 20) + d.flag("--global-batch-size", {"8", "16", "4096"}, 1 << 30) +
              " --json"};
}

struct Outcome {
  int exit_code = -1;
  double seconds = 0;
  int exported = 0, export_refused = 0;  // of a written plan's four exports
  std::string failure;  // empty: the job kept the contract
};

// One job in its own folder: the contract of the file's opening comment.
Outcome run_job(const RandomJob& job) {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  const testing::CommandResult r = run_pipescope(dir, job.command + job.args, "timeout 10");
  Outcome o;
  o.exit_code = r.exit_code;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r.exit_code != 0 && r.exit_code != 2) {
    o.failure = "exit " + std::to_string(r.exit_code) + " (0 or 2 expected): " + r.err;
    return o;
  }
  if (r.exit_code == 2) {
    if (r.err.rfind("pipescope: error: ", 0) != 0 && r.err.find("--") == std::string::npos) {
      o.failure = "a refusal that names no flag: " + r.err;
    }
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      o.failure += "left behind: " + e.path().filename().string() + "\n";
    }
    return o;
  }
  if (job.command != "llm-plan") return o;
  const double planned = nlohmann::json::parse(r.out)["best"][0]["step_ns"].get<double>();
  const testing::CommandResult again = run_pipescope(dir, "simulate --plan plan.json --json", "timeout 10");
  if (again.exit_code != 0) {
    o.failure = "simulate --plan of the written plan: exit " + std::to_string(again.exit_code) + ": " + again.err;
    return o;
  }
  const double simulated = nlohmann::json::parse(again.out)["step_ns"].get<double>();
  if (simulated != planned) {
    o.failure = "simulate --plan gives step_ns " + std::to_string(simulated) + ", llm-plan printed " +
                std::to_string(planned);
    return o;
  }
  for (const std::string to : {"megatron", "torch", "deepspeed", "torchtitan"}) {
    const std::string out = "export-" + to + ".json";
    const testing::CommandResult e = run_pipescope(dir, "export --plan plan.json --to " + to + " --json -o " + out,
                                                   "timeout 10");
    const bool written = std::filesystem::exists(dir.file(out));
    if (e.exit_code == 2 && !written) {
      ++o.export_refused;
      continue;
    }
    if (e.exit_code != 0 || !written) {
      o.failure = "export --to " + to + ": exit " + std::to_string(e.exit_code) + (written ? ", file written" : "") +
                  ": " + e.err;
      return o;
    }
    const nlohmann::json x = nlohmann::json::parse(testing::read_text(dir.file(out)));
    const nlohmann::json& p = x["predicted"];
    const std::string framework = to == "torchtitan" ? "torch" : to;  // torchtitan runs torch's pipelining
    if (x["format"] != "pipescope.export" || p["framework"] != framework) {
      o.failure = "export --to " + to + ": " + x.dump().substr(0, 300);
      return o;
    }
    if (p["framework"] == p["planned_for"] && p["step_ns"].get<double>() != planned) {
      o.failure = "export --to " + to + " states step_ns " + p["step_ns"].dump() + ", llm-plan printed " +
                  std::to_string(planned);
      return o;
    }
    ++o.exported;
  }
  return o;
}

TEST(ReliabilityRandomJobs, EveryJobPlansOrIsRefusedWithExitTwo) {
  Draw d(kSeed);
  std::vector<RandomJob> jobs;
  for (int i = 0; i < kJobs; ++i) jobs.push_back(draw_job(d));
  std::vector<Outcome> outcomes(jobs.size());
  std::mutex next_mutex;
  std::size_t next = 0;
  auto worker = [&] {
    for (;;) {
      std::size_t i;
      {
        std::lock_guard<std::mutex> lock(next_mutex);
        if (next == jobs.size()) return;
        i = next++;
      }
      outcomes[i] = run_job(jobs[i]);
    }
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) workers.emplace_back(worker);
  for (std::thread& w : workers) w.join();

  int refused = 0, planned = 0, exported = 0, export_refused = 0;
  std::size_t slowest = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Outcome& o = outcomes[i];
    refused += o.exit_code == 2;
    planned += o.exit_code == 0;
    exported += o.exported;
    export_refused += o.export_refused;
    if (o.seconds > outcomes[slowest].seconds) slowest = i;
    EXPECT_TRUE(o.failure.empty()) << "seed " << kSeed << ", job " << i << ": pipescope " << jobs[i].command
                                   << jobs[i].args << "\n" << o.failure;
  }
  std::cout << kJobs << " random jobs (seed " << kSeed << "): " << planned << " exit 0, " << refused
            << " refused with exit 2; slowest " << outcomes[slowest].seconds << " s: pipescope "
            << jobs[slowest].command << jobs[slowest].args << "\n"
            << "exports of the written plans: " << exported << " written, " << export_refused << " refused with exit 2\n";
  // Both outcomes occur: a draw that refused everything (or nothing) would test half the contract.
  EXPECT_GT(planned, kJobs / 10);
  EXPECT_GT(refused, kJobs / 10);
  EXPECT_GT(exported, 0);
  EXPECT_GT(export_refused, 0);
}

}  // namespace
}  // namespace pipescope
