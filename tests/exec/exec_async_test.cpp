// The asynchronous schedules run for real: pipedream (weight stashing) and
// 2bw (PipeDream-2BW) on the CPU executor.
//  - Weight stashing: every op of a micro-batch runs on the version its F ran on; under
//    pipedream F takes the stage's current version (one update per earlier B of the
//    stage), under 2bw every op of a step-t micro-batch runs on version max(t - 1, 0).
//  - PipeDream's semantics: the parameters equal one process replaying weight stashing.
//  - 2BW's semantics: after N steps the pipeline's parameters equal one process applying
//    W(t+1) = W(t) - lr g(t), g(t) the gradient of step t's mini-batch at W(max(t-1, 0)).
//  - Memory: the tracked peak of every position, kept weight versions included, equals
//    the simulator's byte for byte (threads here; MPI through the command).
//  - Replicated stages are refused (exit 2, InputError naming the schedule).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "tests/support/cli_run.h"
#include "core/cost_model.h"
#include "core/error.h"
#include "exec/runtime/executor.h"
#include "exec/layers/model.h"
#include "exec/profiler/profiler.h"
#include "tests/support/exec_test_models.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"
#include "tests/support/source_paths.h"

namespace pipescope::exec {
namespace {

Profile measured_profile() { return test::tiny_gpt_measured_profile(); }

Plan async_plan(const Profile& profile, ScheduleKind kind, int K, int M, bool recompute, int replicas = 1) {
  PlanChoice choice;
  choice.stages = K;
  choice.microbatches = M;
  choice.microbatch_size = replicas;  // r must divide the micro-batch
  choice.schedule = kind;
  choice.recompute = recompute_from_r_ops(recompute);
  choice.replicas = replicas;
  choice.partition = PartitionKind::Uniform;
  return make_plan(profile, choice).plan;
}

RunResult run_async(const Profile& profile, const Plan& plan, const Schedule& s, const RunOptions& given) {
  RunOptions o = given;
  o.steps = s.steps;
  o.timeout_s = 60;
  return run_threads(profile, plan, s, o);
}
RunResult run_async(const Profile& profile, const Plan& plan, const Schedule& s) {
  const RunOptions defaults;
  return run_async(profile, plan, s, defaults);
}

// (a) The versions each op ran on, per worker, in the order the worker ran them.
void expect_stashed_versions(const Schedule& s, const RunResult& r, const std::string& label) {
  ASSERT_EQ(static_cast<int>(r.workers.size()), s.positions()) << label;
  int checked = 0;
  for (const WorkerResult& w : r.workers) {
    std::vector<OpRecord> ops;
    for (const StepRecord& step : w.steps) ops.insert(ops.end(), step.ops.begin(), step.ops.end());
    std::stable_sort(ops.begin(), ops.end(), [](const OpRecord& a, const OpRecord& b) { return a.start_ns < b.start_ns; });
    ASSERT_EQ(ops.size(), s.position_ops[w.device].size()) << label;
    std::map<std::pair<int, int>, int> forward_version;  // (stage, micro-batch) -> its F's version
    int updates = 0;  // pipedream: one per B done so far on this (one-stage) device
    for (const OpRecord& o : ops) {
      const std::string where = label + ", " + to_string(o.kind) + " of stage " + std::to_string(o.stage) +
                                " micro-batch " + std::to_string(o.microbatch);
      if (s.weight_update == WeightUpdate::DoubleBuffer) {
        EXPECT_EQ(o.version, std::max(s.step_of(o.microbatch) - 1, 0)) << where << ": 2bw runs step t on max(t-1, 0)";
      }
      if (o.kind == OpKind::Forward) {
        if (s.weight_update == WeightUpdate::Stash) {
          EXPECT_EQ(o.version, updates) << where << ": F takes the current version";
        }
        forward_version[{o.stage, o.microbatch}] = o.version;
      } else {
        auto f = forward_version.find({o.stage, o.microbatch});
        ASSERT_NE(f, forward_version.end()) << where << " ran before its F";
        EXPECT_EQ(o.version, f->second) << where << ": a backward pass uses the version its F used";
        ++checked;
      }
      if (o.kind == OpKind::Backward) ++updates;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(s.num_ops()) - s.stages() * s.microbatches()) << label;  // every non-F op
}

TEST(AsyncExec, EveryBackwardUsesItsForwardsVersion) {
  const Profile profile = measured_profile();
  int runs = 0;
  for (ScheduleKind kind : {ScheduleKind::PipeDream, ScheduleKind::PipeDream2BW}) {
    for (int K = 1; K <= 4; ++K) {
      std::vector<int> Ms = {K, K + 3};
      if (K > 1 && kind == ScheduleKind::PipeDream) Ms.push_back(1);  // fewer than K: 2bw refuses M < K
      for (int M : Ms) {
        for (int steps = 1; steps <= 3; ++steps) {
          for (bool rc : {false, true}) {
            const Plan plan = async_plan(profile, kind, K, M, rc);
            const Schedule s = schedule_for(plan, steps);
            const std::string label = to_string(kind) + " K=" + std::to_string(K) + " M=" + std::to_string(M) +
                                      " steps=" + std::to_string(steps) + (rc ? " recompute" : "");
            expect_stashed_versions(s, run_async(profile, plan, s), label);
            ++runs;
          }
        }
      }
    }
  }
  // pipedream: M in {K, K+3, 1} (K = 1: two), 11 values; 2bw: M in {K, K+3}, 8; x 3 steps x 2 recompute.
  EXPECT_EQ(runs, (11 + 8) * 3 * 2);
}

// One process's forward and backward of samples [first, first + rows) through the whole
// model, the loss scaled per step batch `batch` (as the workers scale it): the parameters'
// gradients accumulate.
void add_gradient(Context ctx, StageLayers& layers, int64_t first, int64_t rows, int64_t batch) {
  const int64_t seq = layers.front()->sequence();
  const int64_t in = layers.front()->in_features(), out = layers.back()->out_features();
  Tensor h = Tensor::from_host(ctx, rows * seq, in, input_data(first, rows, seq, in));
  std::vector<LayerStash> stashes(layers.size());
  for (std::size_t l = 0; l < layers.size(); ++l) h = layers[l]->forward(h, &stashes[l]);
  Tensor target = Tensor::from_host(ctx, rows * seq, out, target_data(first, rows, seq, out));
  Tensor g = Tensor::empty(ctx, rows * seq, out);
  const double denom = static_cast<double>(batch) * seq * out;
  ctx.backend.mse_gradient(g.data(), h.data(), target.data(), static_cast<float>(2.0 / denom), h.numel());
  for (std::size_t l = layers.size(); l-- > 0;) g = layers[l]->backward(g, stashes[l]);
}

// (b) One process, the whole model, SGD (w -= lr g exactly): W(0) = the initial weights;
// for t = 0 .. N-1: g(t) = the gradient of step t's B samples (rows [t B, (t+1) B), the
// loss scaled per step batch) at W(max(t-1, 0)); W(t+1) = W(t) - lr g(t). With
// `delayed` false it applies the synchronous rule (g(t) at W(t)) instead.
std::map<int, std::vector<std::vector<float>>> reference_2bw(const Profile& profile, const Plan& plan, int steps,
                                                              float lr, bool delayed) {
  std::unique_ptr<Backend> backend = make_backend("cpu");
  MemoryTracker tracker;
  Context ctx{*backend, tracker};
  StageLayers layers = build_stage_layers(profile, 0, profile.num_layers(), ctx);
  std::vector<Parameter*> params;
  for (auto& l : layers) {
    for (Parameter* p : l->parameters()) params.push_back(p);
  }
  auto weights = [&] {
    std::vector<std::vector<float>> w;
    for (Parameter* p : params) w.push_back(p->value.to_host());
    return w;
  };
  std::vector<std::vector<float>> current = weights(), previous = current;
  const int64_t B = plan.batch_size;
  for (int t = 0; t < steps; ++t) {
    const std::vector<std::vector<float>>& at = delayed ? previous : current;  // previous = W(max(t-1, 0))
    for (std::size_t i = 0; i < params.size(); ++i) {
      backend->upload(params[i]->value.data(), at[i].data(), params[i]->value.numel());
      backend->fill(params[i]->grad.data(), 0.0f, params[i]->grad.numel());
    }
    add_gradient(ctx, layers, t * B, B, B);
    previous = current;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::vector<float> grad = params[i]->grad.to_host();
      for (std::size_t j = 0; j < grad.size(); ++j) current[i][j] -= lr * grad[j];
    }
  }
  std::map<int, std::vector<std::vector<float>>> by_layer;
  std::size_t next = 0;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    auto& tensors = by_layer[static_cast<int>(l)];  // parameter-less layers too (an empty list), as the workers bring
    for (std::size_t k = 0; k < layers[l]->parameters().size(); ++k) tensors.push_back(current[next++]);
  }
  return by_layer;
}

// The largest ||a - b|| / ||b|| over the parameter tensors.
double largest_error(const std::map<int, std::vector<std::vector<float>>>& got,
                     const std::map<int, std::vector<std::vector<float>>>& want) {
  double worst = 0;
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [layer, tensors] : want) {
    const auto& mine = got.at(layer);
    EXPECT_EQ(mine.size(), tensors.size()) << "layer " << layer;
    for (std::size_t i = 0; i < std::min(mine.size(), tensors.size()); ++i) {
      double diff = 0, norm = 0;
      for (std::size_t j = 0; j < tensors[i].size(); ++j) {
        diff += std::pow(double(mine[i][j]) - tensors[i][j], 2);
        norm += std::pow(double(tensors[i][j]), 2);
      }
      worst = std::max(worst, norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff));
    }
  }
  return worst;
}

TEST(AsyncExec, TwoBwEqualsTheDelayedUpdateRule) {
  const Profile profile = measured_profile();
  const float lr = 0.5f;  // large enough that stale and fresh gradients give different weights
  for (int K : {1, 2, 4}) {
    for (int steps : {1, 2, 3}) {
      for (bool rc : {false, true}) {
        const int M = K + 1;
        const Plan plan = async_plan(profile, ScheduleKind::PipeDream2BW, K, M, rc);
        const Schedule s = schedule_for(plan, steps);
        RunOptions o;
        o.optimizer = {OptimizerKind::Sgd, lr};
        o.keep_parameters = true;
        RunResult r = run_async(profile, plan, s, o);
        std::map<int, std::vector<std::vector<float>>> got;
        for (WorkerResult& w : r.workers) got.merge(w.parameters);
        const std::string label = "2bw K=" + std::to_string(K) + " steps=" + std::to_string(steps) + (rc ? " recompute" : "");
        EXPECT_LT(largest_error(got, reference_2bw(profile, plan, steps, lr, true)), 1e-5) << label;
        // The rule is what the test tells apart: from 3 steps on, synchronous SGD ends elsewhere.
        if (steps == 3) {
          EXPECT_GT(largest_error(got, reference_2bw(profile, plan, steps, lr, false)), 1e-3) << label;
        }
      }
    }
  }
}

// PipeDream's weight stashing in one process, SGD: stage s's version k is W_s(k) =
// W_s(0) - lr (g_s(0) + ... + g_s(k-1)), one update per micro-batch in order (its B). Micro-
// batch n runs forward and backward with every stage s on W_s(v_s(n)), v_s(n) = the B ops
// of stage s before F(s, n) in the schedule's device order (read from the schedule, not
// from the executor); g_s(n) is stage s's gradient of n's b samples (loss scaled per step batch).
std::map<int, std::vector<std::vector<float>>> reference_pipedream(const Profile& profile, const Plan& plan,
                                                                    const Schedule& s, float lr) {
  std::unique_ptr<Backend> backend = make_backend("cpu");
  MemoryTracker tracker;
  Context ctx{*backend, tracker};
  StageLayers layers = build_stage_layers(profile, 0, profile.num_layers(), ctx);
  const int S = s.stages(), N = s.microbatches();
  std::vector<std::vector<Parameter*>> params(S);  // per stage
  for (int st = 0; st < S; ++st) {
    for (int l = plan.stages[st].first_layer; l < plan.stages[st].end_layer; ++l) {
      for (Parameter* p : layers[l]->parameters()) params[st].push_back(p);
    }
  }
  std::vector<std::vector<int>> version(S, std::vector<int>(N, -1));  // v_s(n)
  for (int d = 0; d < s.positions(); ++d) {
    std::vector<int> done(S, 0);
    for (const Op& op : s.position_ops[d]) {
      if (op.kind == OpKind::Forward) version[op.stage][op.microbatch] = done[op.stage];
      if (op.kind == OpKind::Backward) ++done[op.stage];
    }
  }
  // history[s][k][i]: stage s's parameter i at version k.
  std::vector<std::vector<std::vector<std::vector<float>>>> history(S);
  for (int st = 0; st < S; ++st) {
    history[st].emplace_back();
    for (Parameter* p : params[st]) history[st][0].push_back(p->value.to_host());
  }
  const int64_t b = plan.microbatch_size(), B = plan.batch_size;
  for (int n = 0; n < N; ++n) {
    for (int st = 0; st < S; ++st) {
      for (std::size_t i = 0; i < params[st].size(); ++i) {
        Parameter& p = *params[st][i];
        backend->upload(p.value.data(), history[st].at(version[st][n])[i].data(), p.value.numel());
        backend->fill(p.grad.data(), 0.0f, p.grad.numel());
      }
    }
    add_gradient(ctx, layers, n * b, b, B);
    for (int st = 0; st < S; ++st) {
      std::vector<std::vector<float>> next = history[st].back();
      for (std::size_t i = 0; i < params[st].size(); ++i) {
        const std::vector<float> grad = params[st][i]->grad.to_host();
        for (std::size_t j = 0; j < grad.size(); ++j) next[i][j] -= lr * grad[j];
      }
      history[st].push_back(std::move(next));
    }
  }
  std::map<int, std::vector<std::vector<float>>> by_layer;
  for (int st = 0; st < S; ++st) {
    std::size_t next = 0;
    for (int l = plan.stages[st].first_layer; l < plan.stages[st].end_layer; ++l) {
      auto& tensors = by_layer[l];
      for (std::size_t k = 0; k < layers[l]->parameters().size(); ++k) tensors.push_back(history[st].back()[next++]);
    }
  }
  return by_layer;
}

TEST(AsyncExec, PipeDreamEqualsWeightStashingInOneProcess) {
  const Profile profile = measured_profile();
  const float lr = 0.5f;
  int stale = 0;  // runs where some micro-batch ran on an older version than the newest
  for (int K : {1, 2, 3, 4}) {
    for (int M : {1, K + 1}) {
      for (bool rc : {false, true}) {
        const Plan plan = async_plan(profile, ScheduleKind::PipeDream, K, M, rc);
        const Schedule s = schedule_for(plan, 2);
        RunOptions o;
        o.optimizer = {OptimizerKind::Sgd, lr};
        o.keep_parameters = true;
        RunResult r = run_async(profile, plan, s, o);
        std::map<int, std::vector<std::vector<float>>> got;
        for (WorkerResult& w : r.workers) got.merge(w.parameters);
        const std::string label = "pipedream K=" + std::to_string(K) + " M=" + std::to_string(M) + (rc ? " recompute" : "");
        EXPECT_LT(largest_error(got, reference_pipedream(profile, plan, s, lr)), 1e-5) << label;
        for (const WorkerResult& w : r.workers) {
          for (const StepRecord& step : w.steps) {
            for (const OpRecord& op : step.ops) stale += op.kind == OpKind::Forward && op.version < op.microbatch;
          }
        }
      }
    }
  }
  EXPECT_GT(stale, 0) << "no run had a micro-batch in flight across an update: the test would not see stashing";
}

// (c) Predicted and tracked peaks per position, each part and the weight versions.
TEST(AsyncExec, TrackedMemoryEqualsThePredictionVersionsIncluded) {
  const Profile profile = measured_profile();
  ASSERT_TRUE(profile.has_workspace());
  for (ScheduleKind kind : {ScheduleKind::PipeDream, ScheduleKind::PipeDream2BW}) {
    for (int K = 1; K <= 4; ++K) {
      for (bool rc : {false, true}) {
        const Plan plan = async_plan(profile, kind, K, 2 * K, rc);
        const Schedule s = schedule_for(plan, 3);
        const Hardware hw = Hardware::ideal(K);
        const StepReport p = simulate(s, build_cost_model(profile, plan, hw), hw);
        const StepReport m = run_async(profile, plan, s).report;
        const std::string label = to_string(kind) + " K=" + std::to_string(K) + (rc ? " recompute" : "");
        test::expect_same_position_memory(p, m, label);
        // Closed forms: pipedream holds K - d versions on position d (1F1B keeps K - d
        // micro-batches in flight there, each on its own version); 2bw two (steps 1 and 2
        // run on versions 0 and 1 while the current one is a step ahead).
        for (std::size_t d = 0; d < p.positions.size(); ++d) {
          EXPECT_EQ(p.positions[d].weight_versions, kind == ScheduleKind::PipeDream ? K - static_cast<int>(d) : 2)
              << label << ", position " << d;
        }
        // Both memory curves (every step's samples) reach the peak.
        test::expect_curves_reach_the_peaks(p, label);
        test::expect_curves_reach_the_peaks(m, label);
        // The report has the simulator's step structure, so compare shows the steady state on both sides.
        EXPECT_EQ(m.steps, 3) << label;
        EXPECT_EQ(m.step_end_ns.size(), 3u) << label;
        EXPECT_GT(m.steady_state_step_ns, 0) << label;
      }
    }
  }
}

// (d) PipeDream's round-robin replication is not built: refused before anything runs.
TEST(AsyncExec, ReplicatedStagesAreRefused) {
  const Profile profile = measured_profile();
  const Plan plan = async_plan(profile, ScheduleKind::OneFOneB, 2, 4, false, 2);
  for (const Schedule& s : {make_pipedream(2, 4, 2), make_2bw(2, 4, 2)}) {
    try {
      run_async(profile, plan, s);
      ADD_FAILURE() << s.name << " ran with replicated stages";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(s.name + ": replicated stages are not supported"), std::string::npos) << e.what();
    }
  }
  for (const char* kind : {"pipedream", "2bw"}) {
    const testing::CliResult r = testing::run_cli(std::string("run --profile ") + PIPESCOPE_SOURCE_DIR +
                                                  "/profiles/gpt-tiny-cpu.json -K 2 --replicas 2 -M 4 "
                                                  "--microbatch-size 2 --schedule " + kind + " --steps 2");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(std::string("--replicas: ") + kind), std::string::npos) << r.out;
  }
}

// A fault in a later step's micro-batch (the index names its step: micro-batch 5 of
// M = 4 is in step 1) stops the run with a message naming stage, op, micro-batch and step.
TEST(AsyncExec, FaultInALaterStepIsNamed) {
  const Profile profile = measured_profile();
  const Plan plan = async_plan(profile, ScheduleKind::PipeDream, 2, 4, false);
  const Schedule s = schedule_for(plan, 2);
  RunOptions o;
  o.fault = parse_fault("1:backward:5");
  try {
    run_async(profile, plan, s, o);
    ADD_FAILURE() << "the injected fault did not stop the run";
  } catch (const RunError& e) {
    EXPECT_NE(std::string(e.what()).find("stage 1 (device 1) failed at backward of micro-batch 5 in step 1"),
              std::string::npos) << e.what();
  }
}

#ifdef PIPESCOPE_MPIEXEC
// Over MPI (one rank per stage, records serialised to rank 0): the same byte-exact peaks,
// read from run --compare --json: every stage's peak_memory_bytes and weight_version_bytes
// have predicted == measured.
// In suite ExecMpi: scripts/sanitize.sh runs the MPI tests without leak checks (Open MPI's own).
TEST(ExecMpi, AsyncTrackedMemoryEqualsThePrediction) {
  for (const std::string kind : {"pipedream", "2bw"}) {
    const std::string cmd = std::string(PIPESCOPE_MPIEXEC) + " --allow-run-as-root --oversubscribe -np 3 " +
                            PIPESCOPE_BINARY + " run --profile " + PIPESCOPE_SOURCE_DIR +
                            "/profiles/gpt-tiny-cpu.json -K 3 -M 4 --schedule " + kind +
                            " --steps 3 --transport mpi --timeout 60 --compare --json 2>/dev/null";
    FILE* pipe = popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    EXPECT_EQ(pclose(pipe), 0) << out;
    const std::size_t open = out.find('{'), close = out.rfind('}');
    ASSERT_TRUE(open != std::string::npos && close != std::string::npos) << out;
    const Json j = Json::parse(out.substr(open, close - open + 1));
    EXPECT_EQ(j.at("steps").get<int>(), 3) << kind;
    EXPECT_TRUE(j.contains("steady_state_step_time_ms")) << kind;
    int peaks = 0, versions = 0;
    for (const Json& v : j.at("comparison").at("values")) {
      const std::string name = v.at("name").get<std::string>();
      const bool peak = name.ends_with("peak_memory_bytes"), version = name.ends_with("weight_version_bytes");
      if (!peak && !version) continue;
      EXPECT_EQ(v.at("measured").get<double>(), v.at("predicted").get<double>()) << kind << ": " << name;
      peaks += peak;
      versions += version;
    }
    EXPECT_EQ(peaks, 3) << kind;
    EXPECT_GE(versions, 2) << kind;  // pipedream's last position keeps none
  }
}
#endif

}  // namespace
}  // namespace pipescope::exec
