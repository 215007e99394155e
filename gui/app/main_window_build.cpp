// MainWindow's construction: the left panel, the tabs and the menus, then the
// connections between widgets, models and workers, in the order the constructor makes
// them; the rest of the class is in main_window.cpp and main_window_choose.cpp.
#include "gui/app/main_window.h"

#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMimeData>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "core/atomic_file.h"
#include "core/error.h"
#include "gui/app/ab_view.h"
#include "gui/app/compare_view.h"
#include "gui/app/controls_panel.h"
#include "gui/app/export.h"
#include "gui/app/layer_chart.h"
#include "gui/app/llm_memory_view.h"
#include "gui/app/memory_view.h"
#include "gui/app/plans_view.h"
#include "gui/app/sweep_view.h"
#include "gui/app/timeline_view.h"
#include "gui/models/memory_curves.h"
#include "gui/app/distribution_view.h"
#include "gui/models/plan_search.h"
#include "gui/models/timeline_merge.h"
#include "gui/models/trace_reader.h"
#include "sim/replay.h"
#include "sim/simulator.h"

namespace pipescope::gui {

namespace {
// A view's "open ..." request shows a file dialog in `folder`; the chosen file goes to `open`.
template <class Sender, class Signal, class Open>
void open_on_request(MainWindow* w, Sender* sender, Signal signal, const QString& title, const QString& folder, Open open) {
  QObject::connect(sender, signal, w, [w, title, folder, open] {
    const QString f = QFileDialog::getOpenFileName(w, title, folder, "JSON (*.json)");
    if (!f.isEmpty()) open(f);
  });
}
}  // namespace

MainWindow::MainWindow(const AppOptions& options, QWidget* parent) : QMainWindow(parent), options_(options) {
  setWindowTitle("pipescope - pipeline plans");
  setAcceptDrops(true);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(build_left_panel());
  build_tabs(split);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({340, 1060});
  setCentralWidget(split);
  build_menus();
  connect_simulation();
  connect_sweep();
  connect_compare();
  open_startup_files();
}

// The timeline over the memory chart: what a plan does, step by step.
QWidget* MainWindow::build_plan_tab() {
  auto* plan_tab = new QSplitter(Qt::Vertical, tabs_);
  timeline_view_ = new TimelineView(plan_tab);
  timeline_view_->set_model(&timeline_);
  memory_view_ = new MemoryView(plan_tab);
  llm_memory_view_ = new LlmMemoryView(plan_tab);  // shown when the plan carries a layout
  llm_memory_view_->set_model(&llm_memory_);
  llm_memory_view_->hide();
  plan_tab->setStretchFactor(0, 3);
  plan_tab->setStretchFactor(1, 2);
  return plan_tab;
}

// Per-layer costs: a chart of the chosen metric over the layer table.
QWidget* MainWindow::build_layers_tab() {
  auto* layers_tab = new QWidget(tabs_);
  auto* layers_layout = new QVBoxLayout(layers_tab);
  auto* metric = new QComboBox(layers_tab);
  metric->addItem("F+B time", LayerTableModel::CostMs);
  metric->addItem("Forward time", LayerTableModel::ForwardMs);
  metric->addItem("Backward time", LayerTableModel::BackwardMs);
  metric->addItem("Activation bytes", LayerTableModel::ActivationBytes);
  metric->addItem("Output bytes", LayerTableModel::OutputBytes);
  metric->addItem("Parameter bytes", LayerTableModel::ParameterBytes);
  auto* layer_split = new QSplitter(Qt::Vertical, layers_tab);
  layer_chart_ = new LayerChart(layer_split);
  layer_chart_->set_model(&layers_);
  layer_chart_->set_column(LayerTableModel::CostMs);
  auto* layer_table = new QTableView(layer_split);
  layer_table->setModel(&layers_);
  layer_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  layers_layout->addWidget(metric);
  layers_layout->addWidget(layer_split, 1);
  connect(metric, &QComboBox::currentIndexChanged, this,
          [this, metric](int) { layer_chart_->set_column(metric->currentData().toInt()); });
  return layers_tab;
}

void MainWindow::build_tabs(QWidget* parent) {
  tabs_ = new QTabWidget(parent);
  tabs_->addTab(build_plan_tab(), "Timeline && memory");
  tabs_->addTab(build_layers_tab(), "Layers");
  sweep_view_ = new SweepView(tabs_);
  sweep_view_->set_model(&sweep_);
  tabs_->addTab(sweep_view_, "Sweep K x M");

  compare_view_ = new CompareView(tabs_);
  compare_view_->set_models(&compare_, &compare_rows_);
  tabs_->addTab(compare_view_, "Compare");

  plans_view_ = new PlansView("Search",
                              "Simulate every candidate as `pipescope sweep` does (D = the hardware's devices, N = "
                              "micro-batch size x M)",
                              "Press \"Search\" to simulate every candidate plan", tabs_);
  plans_view_->set_model(&plans_);
  tabs_->addTab(plans_view_, "Plans");

  ab_view_ = new AbView(tabs_);
  ab_view_->set_models(&ab_, &pinned_timeline_, &timeline_);
  tabs_->addTab(ab_view_, "A/B");

  distribution_view_ = new DistributionView(tabs_);
  tabs_->addTab(distribution_view_, "Distribution");

  llm_plans_view_ = new PlansView("Open llm-plan result...", "A file `pipescope llm-plan ... --top 50 --json > r.json` wrote",
                                  "Open a `pipescope llm-plan --json` result (File > Open llm-plan result..., or "
                                  "--llm-plan FILE)",
                                  tabs_);
  llm_plans_view_->set_model(&llm_plans_);
  tabs_->addTab(llm_plans_view_, "LLM plans");
  connect(distribution_view_, &DistributionView::sampleRequested, this, [this] {
    if (!evaluation_) return;
    try {
      distribution_view_->set_histogram(sample_plan(*evaluation_, hardware_for(current_inputs(), evaluation_->plan),
                                                    distribution_view_->spec(), 40));
    } catch (const std::exception& e) {
      set_status(QString("sampling failed: ") + e.what(), true);
    }
  });
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    if (tabs_->currentWidget() == distribution_view_ && distribution_view_->histogram().empty()) {
      emit distribution_view_->sampleRequested();
    }
  });
}

// Plan worker, controls, what-if debounce, the plans search and the open-file dialogs.
void MainWindow::connect_simulation() {
  connect(&plan_worker_, &PlanWorker::ready, this, &MainWindow::show_evaluation);
  connect(&plan_worker_, &PlanWorker::failed, this, &MainWindow::show_failure);
  connect(&plan_worker_, &PlanWorker::busyChanged, this, [this](bool busy) {
    if (busy) set_status("simulating...", false);
  });
  connect(controls_, &ControlsPanel::changed, this, &MainWindow::simulate);
  what_if_timer_ = new QTimer(this);
  what_if_timer_->setSingleShot(true);
  what_if_timer_->setInterval(250);  // ms of quiet before a what-if edit is simulated
  connect(what_if_timer_, &QTimer::timeout, this, &MainWindow::simulate);
  connect(controls_, &ControlsPanel::whatIfChanged, what_if_timer_, qOverload<>(&QTimer::start));
  connect_plans();
  connect_llm_plans();
  open_on_request(this, controls_, &ControlsPanel::openProfileRequested, "Open profile", profiles_dir(),
                  [this](const QString& f) { open_profile(f); });
  open_on_request(this, controls_, &ControlsPanel::openHardwareRequested, "Open hardware", profiles_dir(),
                  [this](const QString& f) { open_hardware(f); });
}

void MainWindow::connect_sweep() {
  connect(sweep_view_, &SweepView::runRequested, this, &MainWindow::run_sweep);
  connect(sweep_view_, &SweepView::cancelRequested, this, [this] { sweep_worker_.cancel(); });
  connect(sweep_view_, &SweepView::cellClicked, this, [this](int k, int m) {
    const SweepAxes& axes = sweep_.result().axes;
    if (axes.batch > 0) {
      controls_->set_cell(k, m, static_cast<int>(axes.batch / m), axes.devices / k);
    } else {
      controls_->set_cell(k, m);
    }
    tabs_->setCurrentIndex(0);
  });
  connect(&sweep_worker_, &SweepWorker::progress, sweep_view_, &SweepView::set_progress);
  connect(&sweep_worker_, &SweepWorker::finished, this, [this](const SweepResult& r) {
    sweep_view_->set_running(false);
    sweep_.set_result(r);
    if (r.cancelled) {
      sweep_view_->set_message("cancelled");
    } else if (r.best < 0) {
      sweep_view_->set_message("no plan fits");
    } else {
      const SweepCell& b = r.cells[r.best];
      sweep_view_->set_message(QString("best: K=%1, M=%2, %3 samples/s (click a cell to load it)")
                                   .arg(b.stages).arg(b.microbatches).arg(b.throughput, 0, 'f', 1));
    }
  });
  connect(&sweep_worker_, &SweepWorker::failed, this, [this](const QString& m) {
    sweep_view_->set_running(false);
    sweep_view_->set_message(m);
  });
}

void MainWindow::connect_llm_plans() {
  open_on_request(this, llm_plans_view_, &PlansView::actionRequested, "Open llm-plan result", QString(),
                  [this](const QString& f) { open_llm_plan(f); });
}

void MainWindow::connect_compare() {
  open_on_request(this, compare_view_, &CompareView::openMeasurementRequested, "Open measurement", QString(),
                  [this](const QString& f) { open_measurement(f); });
  open_on_request(this, compare_view_, &CompareView::openTraceRequested, "Open Chrome trace", QString(),
                  [this](const QString& f) { open_trace(f); });
}

// The files and actions named on the command line (AppOptions).
void MainWindow::open_startup_files() {
  controls_->set_from(options_);
  resize(options_.size);
  show_tab(options_.tab);
  bool ok = open_hardware(options_.hardware_path);
  if (ok && !options_.runtime_path.isEmpty()) {
    try {
      controls_->set_runtime(std::make_shared<const RuntimeCosts>(load_runtime_costs(options_.runtime_path.toStdString())),
                             QFileInfo(options_.runtime_path).fileName());
    } catch (const std::exception& e) {
      set_status(e.what(), true);
      startup_error_ = status_text();
      ok = false;
    }
  }
  // Without --plan the profile is --profile's or the bundled one; with it, the plan's own
  // (--profile must name the same file) or, for a version 3 plan, its job.
  if (ok && options_.plan_path.isEmpty()) ok = open_profile(options_.profile_path);
  if (ok && !options_.plan_path.isEmpty() && !open_plan_file(options_.plan_path, options_.profile_path)) {
    startup_error_ = status_text();
    ok = false;
  }
  if (ok && !options_.measurement_path.isEmpty()) open_measurement(options_.measurement_path);
  if (ok && !options_.trace_path.isEmpty()) open_trace(options_.trace_path);
  if (ok && options_.run_sweep) run_sweep();
  if (ok && options_.tab == "plans") run_plans();
  if (ok && !options_.pin_path.isEmpty()) pin_plan_file(options_.pin_path);
  if (!options_.llm_plan_path.isEmpty() && !open_llm_plan(options_.llm_plan_path) && startup_error_.isEmpty()) {
    startup_error_ = llm_plans_view_->description();
  }
}

QWidget* MainWindow::build_left_panel() {
  auto* panel = new QWidget(this);
  auto* layout = new QVBoxLayout(panel);
  controls_ = new ControlsPanel(panel);
  layout->addWidget(controls_);
  summary_view_ = new QTableView(panel);
  summary_view_->setModel(&summary_);
  summary_view_->verticalHeader()->hide();
  summary_view_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  summary_view_->horizontalHeader()->setStretchLastSection(true);
  summary_view_->setSelectionMode(QAbstractItemView::NoSelection);
  summary_view_->setAlternatingRowColors(true);
  layout->addWidget(new QLabel("<b>Summary</b>", panel));
  layout->addWidget(summary_view_, 1);
  status_ = new QLabel(panel);
  status_->setWordWrap(true);
  layout->addWidget(status_);
  panel->setMinimumWidth(300);
  return panel;
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("Open &profile...", QKeySequence::Open, controls_, &ControlsPanel::openProfileRequested);
  file->addAction("Open &hardware...", controls_, &ControlsPanel::openHardwareRequested);
  file->addAction("Use ideal hardware", this, [this] { open_hardware(QString()); });
  file->addAction("Open &measurement...", compare_view_, &CompareView::openMeasurementRequested);
  file->addAction("Open Chrome &trace...", compare_view_, &CompareView::openTraceRequested);
  file->addAction("Open &llm-plan result...", llm_plans_view_, &PlansView::actionRequested);
  file->addSeparator();
  file->addAction("Export timeline as PNG...", this, [this] { export_widget(timeline_view_, "timeline", "png"); });
  file->addAction("Export timeline as SVG...", this, [this] { export_widget(timeline_view_, "timeline", "svg"); });
  file->addAction("Export current chart as PNG...", this, [this] { export_widget(current_chart(), "chart", "png"); });
  file->addAction("Export current chart as SVG...", this, [this] { export_widget(current_chart(), "chart", "svg"); });
  file->addAction("Export A/B as PNG...", this, [this] { export_widget(ab_view_->content(), "a-b", "png"); });
  file->addAction("Export A/B as SVG...", this, [this] { export_widget(ab_view_->content(), "a-b", "svg"); });
  file->addAction("Export plan as JSON...", this, &MainWindow::export_plan);
  file->addSeparator();
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
}

}  // namespace pipescope::gui
