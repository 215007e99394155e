// Measures layers one by one. Invariant: activation_bytes is the tracker's activation
// count after one forward with stash, so the executor charges exactly this per layer;
// weight_grad_bytes is what is left of it after backward_input and release_for_weight
// (what a worker's I leaves for W);
// workspace_bytes are the tracker's peaks above each op's start, with the layer called
// the way a stage worker calls it (exec/runtime/stage_worker.cpp), so core/op_rules.h's
// stage_memory adds them up to the executor's tracked peak.
#include "exec/profiler/profiler.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "core/limits.h"
#include "exec/backends/blas_kernels.h"
#include "exec/layers/optimizer.h"

namespace pipescope::exec {

namespace {

double median_ms(std::vector<int64_t> ns) {
  std::sort(ns.begin(), ns.end());
  const std::size_t n = ns.size();
  double mid = n % 2 ? static_cast<double>(ns[n / 2]) : (ns[n / 2 - 1] + ns[n / 2]) / 2.0;
  return mid / 1e6;
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "cpu";
}

}  // namespace

namespace {

// --statistic trimmed-mean: the mean after dropping the fastest and slowest tenth of the
// samples. A step's time is a sum of many ops, so in principle the ops' mean over the
// machine's fast and slow spells predicts it better than their median (which picks
// whichever spell was longer); on this project's VM the two predicted equally well
// (docs/executor.md, Timing), so the default is the median. The trimming drops one-off outliers.
double trimmed_mean_ms(std::vector<int64_t> ns) {
  std::sort(ns.begin(), ns.end());
  const std::size_t cut = ns.size() / 10;
  double sum = 0;
  for (std::size_t i = cut; i < ns.size() - cut; ++i) sum += static_cast<double>(ns[i]);
  return sum / static_cast<double>(ns.size() - 2 * cut) / 1e6;
}

// One layer at one micro-batch size, set up once and timed in every round.
struct Probe {
  std::size_t index = 0;
  std::unique_ptr<Layer> layer;
  Tensor x, dy;
  int64_t activation_bytes = 0, output_bytes = 0, weight_grad_bytes = 0;
  std::array<int64_t, 6> workspace{};  // LayerWorkspace's fields, in its order
  std::vector<int64_t> forward, backward, backward_input, backward_weight;
};

// (p75 - p25) / median of one op's samples: how much the machine disturbed it.
double relative_spread(std::vector<int64_t> ns) {
  if (ns.size() < 4) return 0.0;
  std::sort(ns.begin(), ns.end());
  const double med = median_ms(ns) * 1e6;
  if (med <= 0) return 0.0;
  const std::size_t n = ns.size();
  return static_cast<double>(ns[(3 * n) / 4] - ns[n / 4]) / med;
}

// The most the tracker's total rose above `start` while `fn` ran.
template <typename Fn>
int64_t peak_above(MemoryTracker& tracker, Fn&& fn) {
  tracker.reset_peaks();
  const int64_t start = tracker.current_total();
  fn();
  return tracker.peak_total() - start;
}

// A layer's bytes, measured through the tracking allocator: stash and output of a
// forward, and the workspace of each op with the tensors the worker holds around it.
void measure_bytes(Probe& pr, Context ctx) {
  MemoryTracker& tracker = ctx.tracker;
  auto copy_of = [&](const Tensor& t) {
    Tensor c = Tensor::empty(ctx, t.rows, t.cols);
    ctx.backend.copy(c.data(), t.data(), t.numel());
    return c;
  };
  std::array<int64_t, 6>& w = pr.workspace;  // input, forward, forward_no_grad, backward_input, backward_weight, held
  LayerStash st;
  const int64_t activations_before = tracker.current(Category::Activations);
  {
    Tensor x = copy_of(pr.x);
    w[0] = x.bytes();
    Tensor y;
    w[1] = peak_above(tracker, [&] { y = pr.layer->forward(x, &st); });
    pr.activation_bytes = tracker.current(Category::Activations) - activations_before;
    pr.output_bytes = y.bytes();
  }
  {
    Tensor x = copy_of(pr.x);
    w[2] = peak_above(tracker, [&] { pr.layer->forward(x, nullptr); });
  }
  Tensor dy = copy_of(pr.dy);
  const int64_t start = tracker.current_total();
  Tensor dx;
  w[3] = peak_above(tracker, [&] { dx = pr.layer->backward_input(dy, st); });
  dy = Tensor{};  // the worker lets go of the output gradient; the layer may keep it
  w[5] = tracker.current_total() - (start - pr.dy.bytes()) - dx.bytes();
  // What W still needs of the stash: what is left once the layer has dropped the rest.
  pr.layer->release_for_weight(st);
  pr.weight_grad_bytes = tracker.current(Category::Activations) - activations_before;
  w[4] = peak_above(tracker, [&] { pr.layer->backward_weight(st); });
}

void check_profile_options(const ProfileOptions& o) {
  if (o.repeats < 1) throw InputError("--repeats: expected at least 1");
  if (o.warmup < 0) throw InputError("--warmup: expected 0 or more");
  check_range("--repeats", o.repeats, 1, kMaxRounds);
  check_range("--warmup", o.warmup, 0, kMaxRounds);
  for (double b : o.batch_sizes) {
    if (b != std::floor(b) || b < 1) throw InputError("--batch-sizes: the executor needs whole micro-batch sizes >= 1");
    if (b > kMaxBatch) throw InputError("--batch-sizes: expected micro-batch sizes up to 2^30, got " + std::to_string(static_cast<int64_t>(b)));
  }
}

// The profile's header (model, device, memory, backend, dtype, sizes) and one named
// layer, with its spec, per model layer; the numbers come later.
Profile profile_header(const ModelFile& model, const ProfileOptions& o, const Backend& backend) {
  Profile p;
  p.model = model.name;
  p.device_name = o.backend == "cpu" ? cpu_name() + " (1 thread, OpenBLAS " + blas_kernels() + " kernels)" : o.backend;
  if (!backend.device_name().empty()) p.device_name = backend.device_name();
  p.device_memory_bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  if (backend.device_memory_bytes() > 0) p.device_memory_bytes = backend.device_memory_bytes();
  p.backend = backend.name();
  p.dtype = backend.dtype();
  p.batch_sizes = o.batch_sizes;
  p.source = model.source;
  p.layers.resize(model.layers.size());
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    p.layers[i].name = model.layers[i].name;
    p.layers[i].spec = model.layers[i].spec;
  }
  return p;
}

std::unique_ptr<Layer> layer_of(const ModelFile& model, std::size_t i, Context& ctx) {
  auto spec_root = std::make_shared<const Json>(model.layers[i].spec);
  JsonReader spec(spec_root, spec_root.get(), model.source, "layers[" + std::to_string(i) + "].spec");
  return make_layer(spec, ctx, kLayerSeed + i);
}

// Times one call on the backend's clock, after touching the flush buffer (and, on
// CUDA, evicting L2) when a cache flush is asked for.
class OpTimer {
 public:
  OpTimer(Backend& backend, int64_t cache_flush_bytes)
      : backend_(backend), flush_(static_cast<std::size_t>(std::max<int64_t>(cache_flush_bytes, 0))),
        flush_caches_(cache_flush_bytes > 0) {}
  template <typename Fn>
  int64_t operator()(Fn&& fn) {
    for (std::size_t k = 0; k < flush_.size(); k += 64) flush_[k] = static_cast<char>(flush_[k] + 1);
    if (flush_caches_) backend_.flush_caches();  // CUDA: evicts L2
    int64_t t0 = backend_.now_ns();
    fn();
    return backend_.now_ns() - t0;
  }

 private:
  Backend& backend_;
  std::vector<char> flush_;
  bool flush_caches_;
};

// Describe: every layer at b samples, with its input, output gradient and byte counts.
std::vector<Probe> describe_probes(const ModelFile& model, int64_t b, Context& ctx, Profile& p) {
  std::vector<Probe> probes(model.layers.size());
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    Probe& pr = probes[i];
    pr.index = i;
    pr.layer = layer_of(model, i, ctx);
    const int64_t rows = b * pr.layer->sequence();
    p.layers[i].parameter_bytes = 0;
    for (Parameter* prm : pr.layer->parameters()) p.layers[i].parameter_bytes += prm->value.bytes();
    pr.x = Tensor::from_host(ctx, rows, pr.layer->in_features(),
                             uniform_values(77 + i, rows * pr.layer->in_features(), 1.0f));
    pr.dy = Tensor::from_host(ctx, rows, pr.layer->out_features(),
                              uniform_values(99 + i, rows * pr.layer->out_features(), 0.01f));
    measure_bytes(pr, ctx);
  }
  return probes;
}

// Run: round r times every layer once, so a slow spell of the machine (another
// tenant, a frequency change) lands on all layers alike instead of on whichever layer
// was being timed; each round starts at a different layer for the same reason.
void time_rounds(std::vector<Probe>& probes, const ProfileOptions& o, Context& ctx, Backend& backend, OpTimer& time) {
  const std::size_t n = probes.size();
  for (int r = 0; r < o.warmup + o.repeats; ++r) {
    const bool keep = r >= o.warmup;
    for (std::size_t j = 0; j < n; ++j) {
      Probe& pr = probes[(j + static_cast<std::size_t>(r)) % n];
      LayerStash st;
      Tensor in = Tensor::empty(ctx, pr.x.rows, pr.x.cols);
      backend.copy(in.data(), pr.x.data(), pr.x.numel());
      int64_t tf = time([&] { pr.layer->forward(in, &st); });
      int64_t tb = time([&] { pr.layer->backward(pr.dy, st); });
      LayerStash st2;
      pr.layer->forward(in, &st2);
      int64_t tbi = time([&] { pr.layer->backward_input(pr.dy, st2); });
      int64_t tw = time([&] { pr.layer->backward_weight(st2); });
      if (keep) {
        pr.forward.push_back(tf);
        pr.backward.push_back(tb);
        pr.backward_input.push_back(tbi);
        pr.backward_weight.push_back(tw);
      }
    }
  }
}

// How disturbed one batch size's timings were: every op's spread, the worst one and whose.
struct Spread {
  std::vector<double> spreads;
  double worst = -1;
  std::string worst_name;
};

// Appends this batch size's numbers to each layer of `p`.
Spread record_probes(const std::vector<Probe>& probes, const ProfileOptions& o, Profile& p) {
  auto keep = [&](const std::vector<int64_t>& ns) { return o.statistic == ProfileStatistic::Median ? median_ms(ns) : trimmed_mean_ms(ns); };
  Spread out;
  for (const Probe& pr : probes) {
    LayerProfile& lp = p.layers[pr.index];
    lp.forward_ms.push_back(keep(pr.forward));
    lp.backward_ms.push_back(keep(pr.backward));
    lp.backward_input_ms.push_back(keep(pr.backward_input));
    lp.backward_weight_ms.push_back(keep(pr.backward_weight));
    lp.activation_bytes.push_back(static_cast<double>(pr.activation_bytes));
    lp.weight_grad_bytes.push_back(static_cast<double>(pr.weight_grad_bytes));
    lp.output_bytes.push_back(static_cast<double>(pr.output_bytes));
    LayerWorkspace& ws = lp.workspace;
    std::vector<double>* fields[] = {&ws.input, &ws.forward, &ws.forward_no_grad, &ws.backward_input,
                                     &ws.backward_weight, &ws.held_for_weight};
    for (int k = 0; k < 6; ++k) fields[k]->push_back(static_cast<double>(pr.workspace[k]));
    // The measured spread as a CV (IQR / 1.349 estimates a normal's sd robustly).
    lp.forward_cv.push_back(relative_spread(pr.forward) / 1.349);
    lp.backward_cv.push_back(relative_spread(pr.backward) / 1.349);
    for (const auto* samples : {&pr.forward, &pr.backward}) {
      const double s = relative_spread(*samples);
      out.spreads.push_back(s);
      if (s > out.worst) {
        out.worst = s;
        out.worst_name = lp.name + (samples == &pr.forward ? " forward" : " backward");
      }
    }
  }
  return out;
}

// Prints one batch size's line to o.progress; returns its typical spread.
double report_spread(Spread sp, const ProfileOptions& o, int64_t b, std::size_t layers, double seconds) {
  std::sort(sp.spreads.begin(), sp.spreads.end());
  const double typical = sp.spreads.empty() ? 0.0 : sp.spreads[sp.spreads.size() / 2];
  char line[512];
  std::snprintf(line, sizeof line,
                "profile: micro-batch %lld: %zu layers x %d rounds in %.1f s; timing spread "
                "(IQR / median) typically %.0f%%, worst %.0f%% (%s)\n",
                static_cast<long long>(b), layers, o.warmup + o.repeats, seconds, 100 * typical,
                100 * std::max(sp.worst, 0.0), sp.worst_name.c_str());
  *o.progress << line;
  o.progress->flush();
  return typical;
}

// The optimizer step (Adam, as `run` uses by default) over each layer's parameters:
// what the step's end costs (core/op_rules.h), independent of the micro-batch size.
void time_optimizer_steps(const ModelFile& model, const ProfileOptions& o, Backend& backend, OpTimer& time,
                          Profile& p) {
  MemoryTracker tracker;
  Context ctx{backend, tracker};
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    std::unique_ptr<Layer> layer = layer_of(model, i, ctx);
    Optimizer opt(ctx, layer->parameters(), OptimizerSettings{});
    std::vector<int64_t> ns;
    for (int r = 0; r < o.warmup + o.repeats; ++r) {
      const int64_t t = time([&] { opt.step(); });
      if (r >= o.warmup) ns.push_back(t);
    }
    p.layers[i].optimizer_ms = o.statistic == ProfileStatistic::Median ? median_ms(ns) : trimmed_mean_ms(ns);
  }
}

}  // namespace

ProfileStatistic parse_profile_statistic(const std::string& name) {
  if (name == "median") return ProfileStatistic::Median;
  if (name == "trimmed-mean") return ProfileStatistic::TrimmedMean;
  throw InputError("--statistic: expected trimmed-mean or median, got \"" + name + "\"");
}

std::string to_string(ProfileStatistic statistic) {
  return statistic == ProfileStatistic::Median ? "median" : "trimmed-mean";
}

Profile profile_model(const ModelFile& model, const ProfileOptions& o) {
  check_profile_options(o);
  std::unique_ptr<Backend> backend = make_backend(o.backend);
  Profile p = profile_header(model, o, *backend);
  OpTimer time(*backend, o.cache_flush_bytes);
  double noisiest = 0;  // largest typical timing spread over the batch sizes
  for (double bd : o.batch_sizes) {
    const int64_t b = static_cast<int64_t>(bd);
    const int64_t started = backend->now_ns();
    MemoryTracker tracker;
    Context ctx{*backend, tracker};
    std::vector<Probe> probes;
    try {  // a size whose tensors this machine cannot hold is the flag's value, not a bug
      probes = describe_probes(model, b, ctx, p);
      time_rounds(probes, o, ctx, *backend, time);
    } catch (const std::bad_alloc&) {
      throw InputError("--batch-sizes: micro-batch size " + std::to_string(b) + ": the layers' tensors do not fit in " +
                       "this machine's memory");
    }
    Spread spread = record_probes(probes, o, p);
    if (o.progress != nullptr) {
      const double seconds = static_cast<double>(backend->now_ns() - started) / 1e9;
      noisiest = std::max(noisiest, report_spread(std::move(spread), o, b, probes.size(), seconds));
    }
  }
  time_optimizer_steps(model, o, *backend, time, p);
  if (o.progress != nullptr && noisiest > 0.15) {
    *o.progress << "profile: warning: this machine is noisy (typical spread above 15%): a single "
                   "measured step may differ from predictions by that much; compare medians of "
                   "several runs, or measure on a quieter machine\n";
  }
  return p;
}

}  // namespace pipescope::exec
