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
  predicted_ = new TimelineView(split);
  measured_ = new TimelineView(split);
  predicted_->set_title("Predicted");
  measured_->set_title("Measured (from the Chrome trace)");
  measured_->hide();
  split->setSizes({260, 320, 320});
  layout->addWidget(split, 1);
  connect(open, &QPushButton::clicked, this, &CompareView::openMeasurementRequested);
  connect(trace, &QPushButton::clicked, this, &CompareView::openTraceRequested);
  connect(predicted_, &TimelineView::axisChanged, measured_, &TimelineView::set_axis);
  connect(measured_, &TimelineView::axisChanged, predicted_, &TimelineView::set_axis);
}

void CompareView::set_models(CompareModel* errors, const TimelineModel* predicted, const TimelineModel* measured) {
  table_->setModel(errors);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  predicted_->set_model(predicted);
  measured_->set_model(measured);
}

void CompareView::set_message(const QString& message) { message_->setText(message); }

void CompareView::set_measured_visible(bool visible) { measured_->setVisible(visible); }

}  // namespace pipescope::gui
