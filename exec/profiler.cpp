// Measures layers one by one. Invariant: activation_bytes is the tracker's activation
// count after one forward with stash, so the executor charges exactly this per layer.
#include "exec/profiler.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/error.h"

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

Profile profile_model(const ModelFile& model, const ProfileOptions& o) {
  if (o.repeats < 1) throw InputError("--repeats: expected at least 1");
  if (o.warmup < 0) throw InputError("--warmup: expected 0 or more");
  for (double b : o.batch_sizes) {
    if (b != std::floor(b) || b < 1) throw InputError("--batch-sizes: the executor needs whole micro-batch sizes >= 1");
  }
  std::unique_ptr<Backend> backend = make_backend(o.backend);
  Profile p;
  p.model = model.name;
  p.device_name = o.backend == "cpu" ? cpu_name() + " (1 thread)" : o.backend;
  if (!backend->device_name().empty()) p.device_name = backend->device_name();
  p.device_memory_bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  if (backend->device_memory_bytes() > 0) p.device_memory_bytes = backend->device_memory_bytes();
  p.backend = backend->name();
  p.dtype = backend->dtype();
  p.batch_sizes = o.batch_sizes;
  p.source = model.source;
  auto root = std::make_shared<const Json>(Json{{"layers", Json::array()}});
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    const ModelLayer& ml = model.layers[i];
    auto spec_root = std::make_shared<const Json>(ml.spec);
    JsonReader spec(spec_root, spec_root.get(), model.source, "layers[" + std::to_string(i) + "].spec");
    LayerProfile lp;
    lp.name = ml.name;
    lp.spec = ml.spec;
    for (double bd : o.batch_sizes) {
      const int64_t b = static_cast<int64_t>(bd);
      MemoryTracker tracker;
      Context ctx{*backend, tracker};
      std::unique_ptr<Layer> layer = make_layer(spec, ctx, kLayerSeed + i);
      const int64_t rows = b * layer->sequence();
      lp.parameter_bytes = 0;
      for (Parameter* prm : layer->parameters()) lp.parameter_bytes += prm->value.bytes();
      Tensor x = Tensor::from_host(ctx, rows, layer->in_features(),
                                   uniform_values(77 + i, rows * layer->in_features(), 1.0f));
      Tensor dy = Tensor::from_host(ctx, rows, layer->out_features(),
                                    uniform_values(99 + i, rows * layer->out_features(), 0.01f));
      // Bytes: a fresh input, one forward with stash.
      int64_t act = 0, out = 0;
      {
        Tensor fresh = Tensor::empty(ctx, x.rows, x.cols);
        backend->copy(fresh.data(), x.data(), x.numel());
        const int64_t before = tracker.current(Category::Activations);
        LayerStash st;
        Tensor y = layer->forward(fresh, &st);
        act = tracker.current(Category::Activations) - before;
        out = y.bytes();
      }
      std::vector<int64_t> f, bw, bi, w;
      std::vector<char> flush(static_cast<std::size_t>(std::max<int64_t>(o.cache_flush_bytes, 0)));
      for (int r = 0; r < o.warmup + o.repeats; ++r) {
        auto time = [&](auto&& fn) {
          for (std::size_t k = 0; k < flush.size(); k += 64) flush[k] = static_cast<char>(flush[k] + 1);
          if (o.cache_flush_bytes > 0) backend->flush_caches();  // CUDA: evicts L2
          int64_t t0 = backend->now_ns();
          fn();
          return backend->now_ns() - t0;
        };
        const bool keep = r >= o.warmup;
        LayerStash st;
        Tensor in = Tensor::empty(ctx, x.rows, x.cols);
        backend->copy(in.data(), x.data(), x.numel());
        int64_t tf = time([&] { layer->forward(in, &st); });
        int64_t tb = time([&] { layer->backward(dy, st); });
        LayerStash st2;
        layer->forward(in, &st2);
        int64_t tbi = time([&] { layer->backward_input(dy, st2); });
        int64_t tw = time([&] { layer->backward_weight(st2); });
        if (keep) {
          f.push_back(tf);
          bw.push_back(tb);
          bi.push_back(tbi);
          w.push_back(tw);
        }
      }
      lp.forward_ms.push_back(median_ms(f));
      lp.backward_ms.push_back(median_ms(bw));
      lp.backward_input_ms.push_back(median_ms(bi));
      lp.backward_weight_ms.push_back(median_ms(w));
      lp.activation_bytes.push_back(static_cast<double>(act));
      lp.output_bytes.push_back(static_cast<double>(out));
    }
    p.layers.push_back(std::move(lp));
  }
  return p;
}

}  // namespace pipescope::exec
