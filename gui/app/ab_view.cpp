#include "gui/app/ab_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "gui/app/timeline_view.h"
#include "gui/models/ab_model.h"

namespace pipescope::gui {

AbView::AbView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  auto* pin = new QPushButton("Pin current as A", this);
  auto* png = new QPushButton("Export PNG...", this);
  auto* svg = new QPushButton("Export SVG...", this);
  message_ = new QLabel("Pin the plan shown as A, then change anything: B follows the controls.", this);
  message_->setWordWrap(true);
  bar->addWidget(pin);
  bar->addWidget(message_, 1);
  bar->addWidget(png);
  bar->addWidget(svg);
  layout->addLayout(bar);
  content_ = new QWidget(this);
  content_->setAutoFillBackground(true);
  content_->setBackgroundRole(QPalette::Base);
  auto* inner = new QVBoxLayout(content_);
  inner->setContentsMargins(0, 0, 0, 0);
  a_ = new TimelineView(content_);
  b_ = new TimelineView(content_);
  table_ = new QTableView(content_);
  table_->verticalHeader()->hide();
  table_->setMinimumHeight(150);
  inner->addWidget(a_, 3);
  inner->addWidget(b_, 3);
  inner->addWidget(table_, 2);
  layout->addWidget(content_, 1);
  connect(pin, &QPushButton::clicked, this, &AbView::pinRequested);
  connect(png, &QPushButton::clicked, this, [this] { emit exportRequested("png"); });
  connect(svg, &QPushButton::clicked, this, [this] { emit exportRequested("svg"); });
  connect(a_, &TimelineView::axisChanged, b_, &TimelineView::set_axis);
  connect(b_, &TimelineView::axisChanged, a_, &TimelineView::set_axis);
}

void AbView::set_models(AbModel* deltas, const TimelineModel* a, const TimelineModel* b) {
  table_->setModel(deltas);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  a_->set_model(a);
  b_->set_model(b);
}

void AbView::set_titles(const QString& a, const QString& b) {
  a_->set_title("A  " + a);
  b_->set_title("B  " + b);
}

void AbView::set_message(const QString& message) { message_->setText(message); }

void AbView::align(int64_t end_ns) {
  a_->set_min_label_width(0);
  b_->set_min_label_width(0);
  const int labels = std::max(a_->label_width(), b_->label_width());
  a_->set_min_label_width(labels);
  b_->set_min_label_width(labels);
  a_->set_fit_end(end_ns);
  b_->set_fit_end(end_ns);
  a_->fit();
  b_->fit();
}

}  // namespace pipescope::gui
