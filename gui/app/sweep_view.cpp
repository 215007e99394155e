#include "gui/app/sweep_view.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QToolTip>
#include <QVBoxLayout>

#include "gui/models/palette.h"
#include "gui/models/sweep_model.h"

namespace pipescope::gui {

namespace {
constexpr int kLeft = 70, kTop = 56, kRight = 16, kBottom = 36;

// A light-to-dark blue ramp for heat in [0, 1].
QColor heat_color(double h) {
  const QColor lo(222, 235, 247), hi(8, 69, 148);
  auto mix = [&](int a, int b) { return static_cast<int>(a + (b - a) * h); };
  return QColor(mix(lo.red(), hi.red()), mix(lo.green(), hi.green()), mix(lo.blue(), hi.blue()));
}
}  // namespace

SweepHeatMap::SweepHeatMap(QWidget* parent) : QWidget(parent) { setMouseTracking(true); }

void SweepHeatMap::set_model(const SweepModel* model) {
  model_ = model;
  connect(model_, &QAbstractItemModel::modelReset, this, qOverload<>(&QWidget::update));
  update();
}

QRect SweepHeatMap::cell_rect(int row, int column) const {
  const int rows = std::max(1, model_ ? model_->rowCount() : 1);
  const int cols = std::max(1, model_ ? model_->columnCount() : 1);
  const int w = (width() - kLeft - kRight) / cols, h = (height() - kTop - kBottom) / rows;
  return QRect(kLeft + column * w, kTop + row * h, w, h);
}

void SweepHeatMap::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().color(QPalette::Text));
  const QString schedule = model_ && !model_->result().schedule.empty()
                               ? QString::fromStdString(model_->result().schedule) + ": "
                               : QString();
  p.drawText(QRect(8, 2, width() - 16, 22), Qt::AlignLeft | Qt::AlignVCenter,
             schedule + "throughput (samples/s) over stages K x micro-batches M; crossed out: does not fit; "
             "grey: impossible plan; \u2605 best");
  p.setFont(font());
  if (!model_ || model_->rowCount() == 0) {
    p.drawText(rect(), Qt::AlignCenter, "Press \"Run sweep\" to evaluate every K x M plan");
    return;
  }
  for (int c = 0; c < model_->columnCount(); ++c) {
    const QRect top = cell_rect(0, c);
    p.drawText(QRect(top.left(), kTop - 24, top.width(), 22), Qt::AlignCenter, model_->headerData(c, Qt::Horizontal).toString());
  }
  for (int r = 0; r < model_->rowCount(); ++r) {
    const QRect rr = cell_rect(r, 0);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(0, rr.top(), kLeft - 8, rr.height()), Qt::AlignRight | Qt::AlignVCenter,
               model_->headerData(r, Qt::Vertical).toString());
    for (int c = 0; c < model_->columnCount(); ++c) {
      const QModelIndex i = model_->index(r, c);
      const QRect cell = cell_rect(r, c).adjusted(1, 1, -1, -1);
      const bool valid = model_->data(i, SweepModel::ValidRole).toBool();
      const bool fits = model_->data(i, SweepModel::FitsRole).toBool();
      if (!valid) {
        p.fillRect(cell, QBrush(QColor(200, 200, 200), Qt::BDiagPattern));
      } else if (!fits) {
        p.fillRect(cell, QColor(250, 228, 228));
        p.setPen(QPen(does_not_fit_color(), 2));
        p.drawLine(cell.topLeft(), cell.bottomRight());
        p.drawLine(cell.topRight(), cell.bottomLeft());
      } else {
        const double h = model_->data(i, SweepModel::HeatRole).toDouble();
        p.fillRect(cell, heat_color(h));
        p.setPen(h > 0.55 ? Qt::white : Qt::black);
        p.drawText(cell, Qt::AlignCenter, model_->data(i).toString());
      }
      if (model_->data(i, SweepModel::BestRole).toBool()) {
        p.setPen(QPen(QColor(255, 170, 0), 4));
        p.setBrush(Qt::NoBrush);
        p.drawRect(cell.adjusted(2, 2, -2, -2));
        p.setPen(QColor(255, 170, 0));
        p.setFont(bold);
        p.drawText(cell.adjusted(6, 4, -6, -4), Qt::AlignTop | Qt::AlignRight, "\u2605");
        p.setFont(font());
      }
    }
  }
}

void SweepHeatMap::mousePressEvent(QMouseEvent* e) {
  if (!model_) return;
  for (int r = 0; r < model_->rowCount(); ++r) {
    for (int c = 0; c < model_->columnCount(); ++c) {
      if (!cell_rect(r, c).contains(e->pos())) continue;
      const QModelIndex i = model_->index(r, c);
      if (model_->data(i, SweepModel::ValidRole).toBool()) {
        emit cellClicked(model_->data(i, SweepModel::StagesRole).toInt(),
                         model_->data(i, SweepModel::MicrobatchesRole).toInt());
      }
      return;
    }
  }
}

void SweepHeatMap::mouseMoveEvent(QMouseEvent* e) {
  if (!model_) return;
  for (int r = 0; r < model_->rowCount(); ++r) {
    for (int c = 0; c < model_->columnCount(); ++c) {
      if (cell_rect(r, c).contains(e->pos())) {
        QToolTip::showText(e->globalPosition().toPoint(), model_->data(model_->index(r, c), Qt::ToolTipRole).toString(), this);
        return;
      }
    }
  }
  QToolTip::hideText();
}

SweepView::SweepView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  run_ = new QPushButton("Run sweep", this);
  cancel_ = new QPushButton("Cancel", this);
  cancel_->setEnabled(false);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  message_ = new QLabel(this);
  planner_grid_ = new QCheckBox("planner's grid (batch and devices fixed)", this);
  planner_grid_->setToolTip("K over the divisors of the hardware's devices (r = D / K), M over the divisors of the "
                            "current mini-batch (micro-batch size N / M), as `pipescope plan` searches");
  bar->addWidget(planner_grid_);
  bar->addWidget(run_);
  bar->addWidget(cancel_);
  bar->addWidget(progress_, 1);
  bar->addWidget(message_, 2);
  layout->addLayout(bar);
  map_ = new SweepHeatMap(this);
  layout->addWidget(map_, 1);
  connect(run_, &QPushButton::clicked, this, &SweepView::runRequested);
  connect(cancel_, &QPushButton::clicked, this, &SweepView::cancelRequested);
  connect(map_, &SweepHeatMap::cellClicked, this, &SweepView::cellClicked);
}

void SweepView::set_model(const SweepModel* model) { map_->set_model(model); }

void SweepView::set_running(bool running) {
  run_->setEnabled(!running);
  cancel_->setEnabled(running);
}

void SweepView::set_progress(int done, int total) {
  progress_->setRange(0, total);
  progress_->setValue(done);
}

bool SweepView::planner_grid() const { return planner_grid_->isChecked(); }

void SweepView::set_planner_grid(bool on) { planner_grid_->setChecked(on); }

void SweepView::set_message(const QString& message) { message_->setText(message); }

}  // namespace pipescope::gui
