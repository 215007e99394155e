#include "gui/app/compare_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "gui/app/timeline_view.h"
#include "gui/models/compare_model.h"
#include "gui/models/timeline_model.h"

namespace pipescope::gui {

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  auto* open = new QPushButton("Open measurement...", this);
  auto* trace = new QPushButton("Open trace...", this);
  message_ = new QLabel("Open a measurement JSON written by `pipescope run` to compare it with the prediction.", this);
  message_->setWordWrap(true);
  bar->addWidget(open);
  bar->addWidget(trace);
  bar->addWidget(message_, 1);
  layout->addLayout(bar);
  auto* split = new QSplitter(Qt::Vertical, this);
  table_ = new QTableView(split);
  table_->setMinimumHeight(120);
  table_->verticalHeader()->hide();
  rows_ = new TimelineView(split);
  set_has_trace(false);
  split->setSizes({260, 640});
  layout->addWidget(split, 1);
  connect(open, &QPushButton::clicked, this, &CompareView::openMeasurementRequested);
  connect(trace, &QPushButton::clicked, this, &CompareView::openTraceRequested);
}

void CompareView::set_models(CompareModel* errors, const TimelineModel* rows) {
  table_->setModel(errors);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  rows_->set_model(rows);
}

void CompareView::set_message(const QString& message) { message_->setText(message); }

void CompareView::set_has_trace(bool has_trace) {
  rows_->set_title(has_trace ? "Predicted (pred) and measured (meas) timelines, row by row"
                             : "Predicted timeline (open the run's Chrome trace to see the measured one beside it)");
}

}  // namespace pipescope::gui
