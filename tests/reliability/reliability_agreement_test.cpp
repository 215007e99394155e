// One validator for every door (issue 56): 1,000 version 3 plans, drawn from a fixed seed,
// each read by the app's own commands in this process (cli/app.cpp's add_all_commands, as
// main() runs them): `validate`, `simulate --plan` and `export --to` each of megatron,
// torch, deepspeed and torchtitan. A plan is a random job its framework runs (validate_job
// accepted it when it was written), then, two times in three, one to three edits of the
// fields a framework decides (framework, sharding, recompute, precision, rank order, sequence
// parallelism, the overlap switches, the plan's p2p, the schedule, cp and ep, the headroom, a
// missing FFN width, a key given twice). The property, for every plan:
//   - validate and simulate --plan accept or refuse it together;
//   - the export to the job's own framework accepts it exactly when validate does;
//   - no export accepts what validate refuses (another framework's export re-checks the job
//     as that framework's and may refuse more: its offer, its memory reserve; torchtitan
//     takes torch's jobs of llama3 shape only);
//   - every refusal is an InputError (exit 2), never another exception.
// On a failure the seed, the plan's index, its text and every door's answer are printed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "interop/hf_config.h"
#include "llm/framework.h"
#include "llm/gpu_model.h"
#include "llm/job.h"
#include "tests/reliability/reliability_util.h"

namespace pipescope {
namespace {

constexpr uint64_t kSeed = 56;  // issue 56
constexpr int kPlans = 1000;

// One door's answer: accepted (exit 0) or the InputError's message; anything else thrown is
// recorded as "internal: ..." and fails the test.
struct Answer {
  bool accepted = false;
  std::string message;
};

// Runs `pipescope ARGS...` as main() would, in this process, its stdout sent to /dev/null
// (the commands print tables and files there) and its stderr to `err` (validate prints each
// file's refusal there), which the answer's message then carries.
Answer run_app(const std::vector<std::string>& args, const std::string& err) {
  std::vector<std::string> argv_text = {"pipescope"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  std::fflush(stdout);
  std::fflush(stderr);
  std::cout.flush();
  std::cerr.flush();
  const int saved_out = dup(1), saved_err = dup(2);
  const int null = open("/dev/null", O_WRONLY);
  const int err_file = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(null, 1);
  dup2(err_file, 2);
  Answer answer;
  try {
    CLI::App app{"pipescope"};
    cli::add_all_commands(app);
    app.parse(static_cast<int>(argv.size()), argv.data());
    answer.accepted = true;
  } catch (const InputError& e) {
    answer.message = e.what();
  } catch (const CLI::ParseError& e) {
    answer.message = std::string("internal: parse error: ") + e.what();
  } catch (const std::exception& e) {
    answer.message = std::string("internal: ") + e.what();
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::cout.flush();
  std::cerr.flush();
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  close(null);
  close(err_file);
  const std::string printed = testing::read_text(err);
  if (!printed.empty() && !answer.accepted) answer.message = printed + answer.message;
  return answer;
}

class Draw {
 public:
  explicit Draw(uint64_t seed) : rng_(seed) {}
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(int one_in) { return uniform(1, one_in) == 1; }
  template <typename T>
  T of(const std::vector<T>& values) {
    return values[static_cast<std::size_t>(uniform(0, static_cast<int>(values.size()) - 1))];
  }

 private:
  std::mt19937_64 rng_;
};

// A small transformer (a job evaluates in milliseconds), dense or with experts; one time in
// eight Llama-3-8B (a llama3 config torchtitan has, so its export can accept).
TransformerShape draw_shape(Draw& d) {
  if (d.chance(8)) {
    TransformerShape llama = load_hf_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/hf/llama-3-8b.json").shape;
    llama.sequence = d.of<int>({2048, 4096});
    return llama;
  }
  TransformerShape s;
  s.name = "agreement";
  s.layers = d.of<int>({4, 8, 12, 16});
  s.heads = d.of<int>({4, 8, 16});
  s.hidden = s.heads * d.of<int>({32, 64});
  s.kv_heads = d.of<int>({0, s.heads / 2, s.heads / 4});
  s.ffn_hidden = d.of<int>({0, 3 * s.hidden, 4 * s.hidden});
  s.swiglu = d.chance(2);
  s.rms_norm = s.swiglu;
  s.bias_linear = !s.swiglu;
  s.tied_embeddings = d.chance(2);
  s.sequence = d.of<int>({512, 1024, 2048});
  s.vocabulary = 8192;
  if (d.chance(4)) s.experts = 8, s.moe_topk = 2;
  return s;
}

ParallelLayout draw_layout(Draw& d, const TransformerShape& shape) {
  ParallelLayout l;
  l.t = d.of<int>({1, 1, 2, 4});
  l.sequence_parallel = l.t > 1 && !d.chance(4);
  l.cp = d.of<int>({1, 1, 2});
  l.p = d.of<int>({1, 2, 2, 4});
  l.d = d.of<int>({1, 2, 4});
  l.ep = shape.experts > 0 ? d.of<int>({1, 2}) : 1;
  l.v = l.p > 1 ? d.of<int>({1, 1, 2}) : 1;
  const std::vector<ScheduleKind> one = {ScheduleKind::OneFOneB, ScheduleKind::GPipe};
  const std::vector<ScheduleKind> looped = {ScheduleKind::Interleaved, ScheduleKind::LoopedBFS,
                                            ScheduleKind::InterleavedZeroBubble, ScheduleKind::ZeroBubbleV,
                                            ScheduleKind::DualPipeV};
  l.schedule = l.v > 1 ? d.of(looped) : d.of(one);
  l.micro_batch = d.of<int>({1, 2});
  l.microbatches = l.p * d.of<int>({1, 2, 4});
  l.sharding = d.of<Sharding>({Sharding::None, Sharding::DistributedOptimizer, Sharding::Zero2, Sharding::Zero3});
  l.recompute = d.of<Recompute>({Recompute::None, Recompute::Selective, Recompute::Full});
  l.precision = d.of<PrecisionRecipe>({PrecisionRecipe::Bf16Mixed, PrecisionRecipe::Bf16Mixed, PrecisionRecipe::Fp32});
  return l;
}

// A job its framework runs, on h100-sxm (nodes of 8): drawn until validate_job accepts one.
Job draw_job(Draw& d, const GpuModel& gpu) {
  for (;;) {
    Job job;
    job.shape = draw_shape(d);
    job.layout = draw_layout(d, job.shape);
    job.framework = d.of<Framework>({Framework::Megatron, Framework::Torch, Framework::DeepSpeed});
    job.cluster = {"h100-sxm", gpu.gpus_per_node()};
    job.vocab_size = job.shape.vocabulary;  // padded below for t
    job.vocab_divisible_by = 128;
    set_framework_overlap(job.framework, d.chance(2), d.chance(2), job.layout, true);
    try {
      job.shape.vocabulary = padded_vocabulary(job.vocab_size, job.layout.t, job.vocab_divisible_by);
      validate_job(job, job.layout.gpus(), nullptr, &gpu);
      return job;
    } catch (const InputError&) {
    }
  }
}

// One edit of a field a framework decides (or a reader's own refusal), in the plan's JSON.
void edit(Draw& d, nlohmann::json& plan) {
  nlohmann::json& l = plan["layout"];
  switch (d.uniform(0, 13)) {
    case 0: plan["job"]["framework"] = d.of<std::string>({"megatron", "torch", "deepspeed"}); break;
    case 1: l["sharding"] = d.of<std::string>({"none", "distributed-optimizer", "zero-2", "zero-3"}); break;
    case 2: l["recompute"] = d.of<std::string>({"none", "selective", "full"}); break;
    case 3: l["precision"] = d.of<std::string>({"bf16-mixed", "fp32", "fp8-params"}); break;
    case 4: l["order"] = d.of<std::string>({"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp", "tp-dp-cp-ep-pp", "dp-tp-cp-ep-pp"}); break;
    case 5: l["sequence_parallel"] = !l["sequence_parallel"].get<bool>(); break;
    case 6: l["overlap_p2p"] = !l["overlap_p2p"].get<bool>(); break;
    case 7: l["overlap_param_gather"] = !l["overlap_param_gather"].get<bool>(); break;
    case 8: plan["p2p"] = d.of<std::string>({"overlapped", "blocking", "batched"}); break;
    case 9: {  // a schedule of the same chunk rule (the plan's kind follows, as plan --out writes them)
      const std::string s = l["v"] == 1 ? d.of<std::string>({"1f1b", "gpipe"})
                                        : d.of<std::string>({"interleaved", "looped-bfs", "interleaved-zb"});
      l["schedule"] = s, plan["schedule"]["kind"] = s;
      break;
    }
    case 10: l[d.chance(2) ? "cp" : "ep"] = d.of<int>({1, 2}); break;
    case 11: plan["job"]["cluster"]["memory_headroom_bytes"] = d.of<double>({1e9, 80e9, 1000e9}); break;
    case 12: plan["job"]["model"]["shape"].erase("ffn_hidden"); break;
    default: l["overlap_grad_reduce"] = !l["overlap_grad_reduce"].get<bool>(); break;
  }
}

const std::vector<std::string> kTargets = {"megatron", "torch", "deepspeed", "torchtitan"};

TEST(ReliabilityAgreement, ValidateSimulateAndTheFourExportsAgreeOnAThousandPlans) {
  testing::TempDir dir;
  const GpuModel gpu = load_gpu("h100-sxm");
  Draw d(kSeed);
  std::map<std::string, int> accepted;
  int disagreements = 0;
  for (int i = 0; i < kPlans && disagreements < 5; ++i) {
    const Job job = draw_job(d, gpu);
    const std::string base = dir.file("base.json");
    write_job_plan(job, gpu, "h100-sxm", base);
    nlohmann::json plan = nlohmann::json::parse(testing::read_text(base));
    if (!d.chance(3)) {
      for (int e = d.uniform(1, 3); e > 0; --e) edit(d, plan);
    }
    std::string text = plan.dump(1);
    if (d.chance(40)) {  // a key given twice
      text.replace(text.find("\"microbatches\": "), 0, "\"microbatches\": 1,\n ");
    }
    std::ofstream(dir.file("p.json")) << text;
    const std::string path = dir.file("p.json");
    std::map<std::string, Answer> answers;
    const std::string err = dir.file("err.txt");
    answers["validate"] = run_app({"validate", path}, err);
    answers["simulate"] = run_app({"simulate", "--plan", path}, err);
    for (const std::string& target : kTargets) {
      answers[target] = run_app({"export", "--plan", path, "--to", target, "-o", "-"}, err);
    }
    const bool valid = answers["validate"].accepted;
    const std::string own = plan["job"].value("framework", "");
    std::vector<std::string> why;
    if (answers["simulate"].accepted != valid) why.push_back("validate and simulate --plan disagree");
    for (const std::string& target : kTargets) {
      const Answer& a = answers[target];
      if (a.accepted && !valid) why.push_back("export --to " + target + " accepts what validate refuses");
      if (target == own && a.accepted != valid) why.push_back("export --to " + target + " (the job's own) disagrees");
      if (a.accepted) ++accepted[target];
    }
    for (const auto& [door, a] : answers) {
      if (a.message.rfind("internal: ", 0) == 0) why.push_back(door + " threw " + a.message);
    }
    accepted["validate"] += valid ? 1 : 0;
    if (why.empty()) continue;
    ++disagreements;
    std::string report = "seed " + std::to_string(kSeed) + ", plan " + std::to_string(i) + ":";
    for (const std::string& w : why) report += "\n  " + w;
    for (const auto& [door, a] : answers) report += "\n  " + door + ": " + (a.accepted ? "ok" : a.message);
    ADD_FAILURE() << report << "\n" << text;
  }
  // how the draws fell (seed 56): printed so a change of the mix shows in the log
  std::printf("of %d plans: validate accepts %d;", kPlans, accepted["validate"]);
  for (const std::string& target : kTargets) std::printf(" export --to %s accepts %d;", target.c_str(), accepted[target]);
  std::printf("\n");
  EXPECT_GT(accepted["validate"], kPlans / 10);   // the draws reach both answers
  EXPECT_LT(accepted["validate"], kPlans * 9 / 10);
}

}  // namespace
}  // namespace pipescope
