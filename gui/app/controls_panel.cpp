#include "gui/app/controls_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGroupBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>

#include "core/schedule.h"
#include "gui/app/app_options.h"
#include "gui/models/schedule_names.h"

namespace pipescope::gui {

ControlsPanel::ControlsPanel(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  auto file_row = [&](QLabel*& label, const char* button, void (ControlsPanel::*signal)()) {
    auto* row = new QHBoxLayout;
    label = new QLabel("-", this);
    label->setMinimumWidth(120);
    auto* open = new QPushButton(button, this);
    row->addWidget(label, 1);
    row->addWidget(open);
    connect(open, &QPushButton::clicked, this, signal);
    return row;
  };
  form->addRow("Profile", file_row(profile_, "Open...", &ControlsPanel::openProfileRequested));
  form->addRow("Hardware", file_row(hardware_, "Open...", &ControlsPanel::openHardwareRequested));
  stages_ = new QSpinBox(this);
  stages_->setRange(1, kMaxDevices);  // more than the hardware has: the library says so
  microbatches_ = new QSpinBox(this);
  microbatches_->setRange(1, kMaxGuiMicrobatches);
  microbatch_size_ = new QSpinBox(this);
  microbatch_size_->setRange(0, kMaxGuiMicrobatchSize);
  microbatch_size_->setSpecialValueText("profile's first");
  schedule_ = new QComboBox(this);
  for (const QString& name : schedule_names()) {
    schedule_->addItem(schedule_label(name), name);
    schedule_->setItemData(schedule_->count() - 1, schedule_tooltip(name), Qt::ToolTipRole);
  }
  chunks_ = new QSpinBox(this);
  chunks_->setRange(1, kMaxGuiChunks);
  recompute_ = new QCheckBox("re-materialise activations", this);
  partition_ = new QComboBox(this);
  for (PartitionKind k : {PartitionKind::Optimal, PartitionKind::GPipe, PartitionKind::Uniform}) {
    partition_->addItem(QString::fromStdString(to_string(k)));
  }
  replicas_ = new QSpinBox(this);
  replicas_->setRange(1, kMaxDevices);
  form->addRow("Stages K", stages_);
  form->addRow("Micro-batches M", microbatches_);
  form->addRow("Micro-batch size", microbatch_size_);
  form->addRow("Schedule", schedule_);
  form->addRow("Chunks", chunks_);
  form->addRow("Recompute", recompute_);
  form->addRow("Partitioner", partition_);
  form->addRow("Replicas r", replicas_);
  auto emit_changed = [this] {
    update_enabled();
    if (!quiet_) emit changed();
  };
  for (QSpinBox* s : {stages_, microbatches_, microbatch_size_, chunks_, replicas_}) {
    connect(s, &QSpinBox::valueChanged, this, emit_changed);
  }
  for (QComboBox* c : {schedule_, partition_}) connect(c, &QComboBox::currentIndexChanged, this, emit_changed);
  connect(recompute_, &QCheckBox::toggled, this, emit_changed);
  what_if_box_ = build_what_if();
  form->addRow(what_if_box_);
  job_box_ = build_job_box();
  form->addRow(job_box_);
  job_box_->hide();
  update_enabled();
}

QWidget* ControlsPanel::build_job_box() {
  auto* box = new QGroupBox("Job layout (K = p, r = d above)", this);
  auto* form = new QFormLayout(box);
  auto spin = [box] {
    auto* s = new QSpinBox(box);
    s->setRange(1, kMaxDevices);
    return s;
  };
  t_ = spin(), cp_ = spin(), ep_ = spin();
  sequence_parallel_ = new QCheckBox("sequence parallel (SP)", box);
  job_recompute_ = new QComboBox(box);
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
    job_recompute_->addItem(QString::fromStdString(to_string(r)), static_cast<int>(r));
  }
  sharding_ = new QComboBox(box);
  for (Sharding z : {Sharding::None, Sharding::DistributedOptimizer, Sharding::Zero2, Sharding::Zero3}) {
    sharding_->addItem(QString::fromStdString(to_string(z)), static_cast<int>(z));
  }
  form->addRow("t (tensor parallel)", t_);
  form->addRow("", sequence_parallel_);
  form->addRow("cp (context parallel)", cp_);
  form->addRow("ep (expert parallel)", ep_);
  form->addRow("Recompute", job_recompute_);
  form->addRow("Sharding", sharding_);
  auto emit_changed = [this] {
    if (!quiet_) emit changed();
  };
  for (QSpinBox* s : {t_, cp_, ep_}) connect(s, &QSpinBox::valueChanged, this, emit_changed);
  for (QComboBox* c : {job_recompute_, sharding_}) connect(c, &QComboBox::currentIndexChanged, this, emit_changed);
  connect(sequence_parallel_, &QCheckBox::toggled, this, emit_changed);
  return box;
}

void ControlsPanel::set_job_layout(const JobLayoutChoice& l) {
  quiet_ = true;
  t_->setValue(l.t);
  cp_->setValue(l.cp);
  ep_->setValue(l.ep);
  sequence_parallel_->setChecked(l.sequence_parallel);
  job_recompute_->setCurrentIndex(job_recompute_->findData(static_cast<int>(l.recompute)));
  sharding_->setCurrentIndex(sharding_->findData(static_cast<int>(l.sharding)));
  quiet_ = false;
}

JobLayoutChoice ControlsPanel::job_layout() const {
  JobLayoutChoice l;
  l.t = t_->value(), l.cp = cp_->value(), l.ep = ep_->value();
  l.sequence_parallel = sequence_parallel_->isChecked();
  l.recompute = static_cast<Recompute>(job_recompute_->currentData().toInt());
  l.sharding = static_cast<Sharding>(sharding_->currentData().toInt());
  return l;
}

QWidget* ControlsPanel::build_what_if() {
  auto* box = new QGroupBox("What-if (re-simulates as you change it)", this);
  auto* form = new QFormLayout(box);
  bandwidth_ = new QDoubleSpinBox(box);
  bandwidth_->setRange(0, 10000);
  bandwidth_->setDecimals(1);
  bandwidth_->setSuffix(" GB/s");
  bandwidth_->setSpecialValueText("as the hardware");
  latency_ = new QDoubleSpinBox(box);
  latency_->setRange(-1, 100000);
  latency_->setDecimals(1);
  latency_->setSuffix(" us");
  latency_->setSpecialValueText("as the hardware");
  latency_->setValue(-1);
  slow_device_ = new QSpinBox(box);
  slow_device_->setRange(-1, kMaxDevices - 1);
  slow_device_->setSpecialValueText("none");
  slow_device_->setValue(-1);
  slow_speed_ = new QDoubleSpinBox(box);
  slow_speed_->setRange(0.05, 4.0);
  slow_speed_->setSingleStep(0.05);
  slow_speed_->setValue(0.5);
  slow_speed_->setPrefix("x ");
  form->addRow("Link bandwidth", bandwidth_);
  form->addRow("Link latency", latency_);
  form->addRow("Slow device", slow_device_);
  form->addRow("Its speed", slow_speed_);
  optimizer_step_ = new QComboBox(box);
  optimizer_step_->addItems({"synchronized", "post-validation"});  // --optimizer-step
  optimizer_step_->setToolTip("post-validation: each device steps after its own last W and runs on; 3 steps, "
                              "the steady state");
  p2p_ = new QComboBox(box);
  p2p_->addItems({"overlapped", "blocking", "batched"});  // --p2p, in P2p's order (core/p2p.h)
  p2p_->setToolTip("blocking: a send or receive holds the device for the transfer (Megatron-LM's default p2p); "
                   "batched: a transfer starts when both ends have posted, the receiver waits (torch's _batch_p2p)");
  form->addRow("Optimizer step", optimizer_step_);
  form->addRow("Point-to-point", p2p_);
  runtime_label_ = new QLabel("ops alone", box);  // --runtime
  runtime_label_->setToolTip("what the runtime spends around the ops (pipescope-gui --runtime FILE, a "
                             "pipescope.runtime file that `pipescope calibrate` writes)");
  form->addRow("Runtime", runtime_label_);
  for (QComboBox* c : {optimizer_step_, p2p_}) {
    connect(c, &QComboBox::currentIndexChanged, this, [this] { if (!quiet_) emit whatIfChanged(); });
  }
  for (QDoubleSpinBox* s : {bandwidth_, latency_, slow_speed_}) {
    connect(s, &QDoubleSpinBox::valueChanged, this, [this] { if (!quiet_) emit whatIfChanged(); });
  }
  connect(slow_device_, &QSpinBox::valueChanged, this, [this] { if (!quiet_) emit whatIfChanged(); });
  return box;
}

WhatIf ControlsPanel::what_if() const {
  WhatIf w;
  w.bandwidth_gb_per_s = bandwidth_->value();
  w.latency_us = latency_->value() < 0 ? -1 : latency_->value();
  w.slow_device = slow_device_->value();
  w.slow_speed = slow_speed_->value();
  w.optimizer_step = parse_optimizer_step(optimizer_step_->currentText().toStdString());
  w.p2p = static_cast<P2p>(p2p_->currentIndex());
  w.runtime = runtime_;
  return w;
}

void ControlsPanel::set_runtime(std::shared_ptr<const RuntimeCosts> runtime, const QString& label) {
  runtime_ = std::move(runtime);
  runtime_label_->setText(runtime_ ? label : QString("ops alone"));
  if (runtime_ && runtime_->p2p) p2p_->setCurrentIndex(static_cast<int>(*runtime_->p2p));
  emit whatIfChanged();
}

void ControlsPanel::set_what_if(const WhatIf& w) {
  quiet_ = true;
  bandwidth_->setValue(w.bandwidth_gb_per_s);
  latency_->setValue(w.latency_us < 0 ? -1 : w.latency_us);
  slow_device_->setValue(w.slow_device);
  slow_speed_->setValue(w.slow_device >= 0 ? w.slow_speed : 0.5);
  optimizer_step_->setCurrentIndex(w.optimizer_step == OptimizerStep::PostValidation ? 1 : 0);
  p2p_->setCurrentIndex(static_cast<int>(w.p2p));
  quiet_ = false;
  emit whatIfChanged();
}

void ControlsPanel::set_choice(const PlanChoice& c) {
  quiet_ = true;
  stages_->setValue(c.stages);
  microbatches_->setValue(c.microbatches);
  microbatch_size_->setValue(static_cast<int>(c.microbatch_size));
  schedule_->setCurrentIndex(schedule_->findData(QString::fromStdString(to_string(c.schedule))));
  chunks_->setValue(c.chunks);
  recompute_->setChecked(c.recompute != Recompute::None);  // a job's selective too
  replicas_->setValue(c.replicas);
  update_enabled();
  quiet_ = false;
}

ScheduleKind ControlsPanel::selected_schedule() const {
  return parse_schedule_kind(schedule_->currentData().toString().toStdString());
}

void ControlsPanel::update_enabled() { chunks_->setEnabled(required_chunks(selected_schedule()) == 0); }

void ControlsPanel::set_from(const AppOptions& o) {
  quiet_ = true;
  stages_->setValue(o.stages);
  microbatches_->setValue(o.microbatches);
  microbatch_size_->setValue(static_cast<int>(o.microbatch_size));
  if (const int i = schedule_->findData(o.schedule); i >= 0) schedule_->setCurrentIndex(i);
  chunks_->setValue(o.chunks);
  recompute_->setChecked(o.recompute == Recompute::Full);
  partition_->setCurrentText(QString::fromStdString(to_string(o.partition)));
  replicas_->setValue(o.replicas);
  update_enabled();
  quiet_ = false;
}

PlanChoice ControlsPanel::choice() const {
  PlanChoice c;
  c.stages = stages_->value();
  c.microbatches = microbatches_->value();
  c.microbatch_size = microbatch_size_->value();
  c.schedule = selected_schedule();
  c.chunks = required_chunks(c.schedule) == 0 ? chunks_->value() : 1;  // interleaved, looped-bfs, interleaved-zb
  c.recompute = recompute_from_r_ops(recompute_->isChecked());
  c.partition = parse_partition_kind(partition_->currentText().toStdString());
  c.replicas = replicas_->value();
  return c;
}

void ControlsPanel::set_cell(int stages, int microbatches, int microbatch_size, int replicas) {
  quiet_ = true;
  stages_->setValue(stages);
  microbatches_->setValue(microbatches);
  if (microbatch_size > 0) microbatch_size_->setValue(microbatch_size);
  if (replicas > 0) replicas_->setValue(replicas);
  quiet_ = false;
  emit changed();
}

void ControlsPanel::set_files(const QString& profile, const QString& hardware) {
  profile_->setText(QFileInfo(profile).fileName());
  profile_->setToolTip(profile);
  hardware_->setText(hardware.isEmpty() ? QString("ideal (free links)") : QFileInfo(hardware).fileName());
  hardware_->setToolTip(hardware);
  enable_profile_controls(true);
  job_box_->hide();
}

void ControlsPanel::set_job(const QString& plan, const QString& gpu) {
  profile_->setText("job of " + QFileInfo(plan).fileName());
  profile_->setToolTip(plan + " holds the whole job (a version 3 plan): model, GPU file, layout, framework");
  hardware_->setText(gpu + " (GPU file)");
  hardware_->setToolTip("the job's GPU file: its memory is the capacity line, its links and GEMM speed the times");
  enable_profile_controls(false);
  job_box_->show();
}

void ControlsPanel::enable_profile_controls(bool on) {
  for (QWidget* w : std::initializer_list<QWidget*>{recompute_, partition_, what_if_box_}) w->setEnabled(on);
}

}  // namespace pipescope::gui
