// What a run is asked to do (RunOptions) and what each stage worker brings back
// (WorkerResult: per-step op and transfer times, memory peaks, gradients for the check).
// Worker results serialise to JSON so that MPI ranks can send them to rank 0.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/json_reader.h"
#include "core/offload.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/schedule.h"
#include "exec/layers/optimizer.h"

namespace pipescope::exec {

// Makes one op fail on purpose (tests of fault handling). `crash` ends the process
// abruptly instead of throwing (MPI: a rank that dies); `drop` runs the op but never
// sends its output (a message that never arrives: the receiver's wait times out).
struct FaultSpec {
  int stage = 0;
  OpKind kind = OpKind::Forward;
  int microbatch = 0;
  int step = 0;
  bool crash = false;
  bool drop = false;
  int replica = 0;  // which replica of a replicated stage
};
// "STAGE[/REPLICA]:OP:MB[:crash|:drop]" with OP one of forward, backward, backward_input, backward_weight, recompute.
FaultSpec parse_fault(const std::string& text);

// Test hook (no flag): at the end of step `step`, the worker holding `stage` writes a NaN
// into the stage's first gradient, as an overflow would; post-validation's global check
// then fails and the step is rolled back. Only post-validation runs look at it.
struct PoisonGradient {
  int stage = 0;
  int step = 0;
};

// Cores this process may run on (its CPU affinity mask).
int usable_cores();
// Pins the calling thread to the i-th (mod count) core of the process's affinity mask.
void pin_current_thread(int i);

// The run's settings that come in as flags (cli/cmd_run.cpp parses them once; the
// string forms live only in parse_* and to_string).
enum class Transport : uint8_t { Threads, Mpi };
std::string to_string(Transport transport);            // "threads", "mpi"
Transport parse_transport(const std::string& name);  // throws InputError naming --transport
// How a stage waits for a message or a barrier: Spin polls and keeps its core busy,
// Block sleeps until woken, Auto spins when every device on this machine has a core of
// its own. On a virtual machine an idle core may be handed to another tenant and comes
// back with cold caches, which slows the next op; spinning avoids that.
enum class WaitMode : uint8_t { Auto, Spin, Block };
std::string to_string(WaitMode wait);             // "auto", "spin", "block"
WaitMode parse_wait_mode(const std::string& name);  // throws InputError naming --wait
// Threads transport: On pins device d's thread to the d-th core this process may use
// (round robin), Off leaves placement to the OS, Auto pins when every device has a core
// of its own (a thread that migrates leaves its warm caches behind).
enum class PinMode : uint8_t { Auto, On, Off };
std::string to_string(PinMode pin);             // "auto", "on", "off"
PinMode parse_pin_mode(const std::string& name);  // throws InputError naming --pin

// Activation offload on the run (exec/runtime/stage_offload.h): which slots go is the
// prediction's decision (sim/offload.h's offload_decision, which `pipescope run` calls), when
// they go and come back core/offload_walk.h's rule on the host link. The cpu backend's
// threads transport, flushed synchronized steps, unreplicated stages.
struct OffloadRun {
  OffloadPolicy policy = OffloadPolicy::All;
  HostLink link;
  std::vector<int64_t> slot_bytes;  // per (stage, micro-batch) slot, stage * M + mb: what its F offloads
};

struct RunOptions {
  std::string backend = "cpu";
  int steps = 3;
  // -1: 1 when steps > 1, else 0. Asynchronous schedules (pipedream, 2bw) run their
  // steps as one op list without a flush and take no warm-up steps (0 or -1 only): their
  // steady-state step leaves out the first step (the fill), as simulate's does.
  int warmup = -1;
  OptimizerSettings optimizer;
  bool check_gradients = false;
  bool keep_parameters = false;  // tests: bring every layer's parameters back (threads transport only)
  double timeout_s = 20.0;      // longest wait for a message or a barrier
  std::optional<FaultSpec> fault;
  Transport transport = Transport::Threads;
  WaitMode wait = WaitMode::Auto;
  PinMode pin = PinMode::Auto;  // threads transport only

  // Where a flushed step ends (core/plan.h). Post-validation runs the steps as one op
  // list on the threads transport: each worker steps its optimizer right after its own
  // last op of the step and runs on into the next step; the global gradient-norm and
  // all-finite check of step t is awaited at the end of step t + 1's ops, and a failed
  // step's update is skipped (parameters and optimizer state restored from the copy kept
  // since) and step t + 1, which ran on the skipped update's weights, is redone.
  OptimizerStep optimizer_step = OptimizerStep::Synchronized;
  // Blocking: as the simulator's (core/plan.h); in model time a sender waits until its
  // tensor has arrived and a receive holds the device for the transfer's time. In
  // measured time the threads transport's sends and receives are copies on the worker's
  // own thread either way.
  P2p p2p = P2p::Overlapped;
  // Deterministic time (threads transport, unreplicated stages): every op, transfer and
  // optimizer step takes the cost model's time on this hardware (exec/runtime/model_clock.h)
  // instead of the steady clock's, so the run's times equal the simulator's prediction.
  std::optional<Hardware> model_time;
  std::optional<PoisonGradient> poison_gradient;
  std::optional<OffloadRun> offload;

  int warmup_steps() const { return warmup >= 0 ? warmup : (steps > 1 ? 1 : 0); }
  // Whether waits spin, given how many devices run on this machine.
  bool spin_waits(int devices_here) const;
  // Whether worker threads are pinned (see PinMode).
  bool pin_threads(int devices_here) const;
};

struct OpRecord {
  OpKind kind;
  int stage, microbatch;
  int64_t start_ns, end_ns;  // steady clock
  int64_t cpu_ns = 0;        // CPU time of the worker's thread during the op
  int version = 0;           // the weight version the op ran on (core/op_rules.h's WeightVersions::use)
};

// Asynchronous schedules: a stage's weight update at the end of the op that freed
// (stage, micro-batch): drop and keep versions, then the optimizer step (timed here).
struct UpdateRecord {
  int stage, microbatch;
  int64_t start_ns, end_ns;  // steady clock
};

struct TransferRecord {
  int from_device, to_device, stage, microbatch;
  int64_t start_ns, end_ns;
};

// An offload (to the host) or a reload of (stage, micro-batch)'s stash on the worker's host tracks.
struct HostTransferRecord {
  bool to_host;
  int stage, microbatch;
  int64_t start_ns, end_ns;
};

struct StepRecord {
  int64_t origin_ns = 0;  // this worker's clock right after the step's start barrier
  std::vector<OpRecord> ops;
  std::vector<TransferRecord> transfers;
  std::vector<MemorySample> memory;  // time, activation, transient and weight-version bytes (device unused)
  int64_t optimizer_start_ns = 0, optimizer_ns = 0;  // the optimizer step that ends the step
  std::vector<UpdateRecord> updates;  // asynchronous: the updates ending this step's ops (no optimizer_ns)
  int64_t allreduce_start_ns = 0, allreduce_end_ns = 0;  // both 0 when the stage is not replicated
  double loss = 0;  // last stage: this step's loss (mean squared error over the mini-batch)
  int64_t peak_activation_bytes = 0;
  int64_t peak_total_bytes = 0;
  // Activation offload (RunOptions::offload): the host tracks, the host pool's series
  // (time, bytes held) and peak, the bytes sent and how long late reloads held up ops.
  std::vector<HostTransferRecord> host_transfers;
  std::vector<std::pair<int64_t, int64_t>> host_memory;
  int64_t host_peak_bytes = 0, offloaded_bytes = 0, offload_delay_ns = 0;
};

// Under an asynchronous schedule the worker runs its op list once (all the schedule's
// steps, one origin) and files each op, transfer, update and memory sample under the
// step of its micro-batch (Schedule::step_of), so `steps` has Schedule::steps records.
struct WorkerResult {
  int device = 0;
  std::vector<StepRecord> steps;
  int weight_versions = 1;           // most weight versions held at once (1 + kept copies)
  int64_t weight_version_bytes = 0;  // the kept copies' bytes then
  int64_t static_bytes = 0;
  int64_t weight_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0;  // the parts of static_bytes
  // Gradients after step 0, per layer index, per parameter (when checking gradients).
  std::map<int, std::vector<std::vector<float>>> gradients;
  // Every parameter after the run, per layer index (when options.keep_parameters; not serialised).
  std::map<int, std::vector<std::vector<float>>> parameters;
  double max_gradient_error = -1;  // filled by MPI ranks that checked their own layers
  uint64_t parameter_hash = 0;     // of every parameter after the last optimizer step
  // Post-validation: the steps whose check failed (their updates skipped), in order;
  // and the checks' results: the global gradient norm of every accepted step.
  std::vector<int> rolled_back_steps;
  std::vector<double> gradient_norms;
};

Json worker_result_to_json(const WorkerResult& r);
WorkerResult worker_result_from_json(const Json& j);

}  // namespace pipescope::exec
