#include "gui/app/layer_chart.h"

#include <QPainter>
#include <algorithm>
#include <map>

#include "core/report.h"
#include "gui/models/layer_table_model.h"
#include "gui/models/palette.h"

namespace pipescope::gui {

LayerChart::LayerChart(QWidget* parent) : QWidget(parent) { setMinimumHeight(160); }

void LayerChart::set_model(const LayerTableModel* model) {
  model_ = model;
  connect(model_, &QAbstractItemModel::modelReset, this, qOverload<>(&QWidget::update));
  update();
}

void LayerChart::set_column(int column) {
  column_ = column;
  update();
}

void LayerChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  if (!model_ || model_->rowCount() == 0) {
    p.drawText(rect(), Qt::AlignCenter, "no profile");
    return;
  }
  const bool bytes = column_ >= LayerTableModel::ActivationBytes;
  const QString what = model_->headerData(column_, Qt::Horizontal).toString();
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().color(QPalette::Text));
  p.drawText(QRect(8, 2, width() - 16, 20), Qt::AlignLeft | Qt::AlignVCenter,
             QString("Per-layer %1 at micro-batch size %2, coloured by stage").arg(what).arg(model_->microbatch_size()));
  p.setFont(font());
  const int n = model_->rowCount();
  const QRect plot(70, 48, width() - 84, height() - 48 - 46);
  double vmax = 0;
  std::map<int, double> stage_total;
  for (int r = 0; r < n; ++r) {
    const double v = model_->data(model_->index(r, column_), LayerTableModel::RawRole).toDouble();
    vmax = std::max(vmax, v);
    stage_total[model_->data(model_->index(r, 0), LayerTableModel::StageRole).toInt()] += v;
  }
  vmax = std::max(vmax * 1.05, 1e-12);
  auto label = [&](double v) {
    return bytes ? QString::fromStdString(format_bytes(v)) : QString::number(v, 'f', v < 1 ? 3 : 2) + " ms";
  };
  p.setPen(QColor(0, 0, 0, 40));
  for (int i = 0; i <= 4; ++i) {
    const int y = plot.bottom() - plot.height() * i / 4;
    p.drawLine(plot.left(), y, plot.right(), y);
  }
  p.setPen(palette().color(QPalette::Text));
  for (int i = 0; i <= 4; ++i) {
    const int y = plot.bottom() - plot.height() * i / 4;
    p.drawText(QRect(0, y - 8, plot.left() - 6, 16), Qt::AlignRight | Qt::AlignVCenter, label(vmax * i / 4));
  }
  const double slot = static_cast<double>(plot.width()) / n;
  int prev_stage = -2, stage_start = 0;
  auto close_stage = [&](int end) {
    if (prev_stage < 0) return;
    const QRect top(plot.left() + static_cast<int>(stage_start * slot), plot.top() - 22,
                    static_cast<int>((end - stage_start) * slot), 20);
    p.setPen(stage_color(prev_stage).darker(120));
    p.drawText(top, Qt::AlignCenter, QString("stage %1: %2").arg(prev_stage).arg(label(stage_total[prev_stage])));
  };
  for (int r = 0; r < n; ++r) {
    const int stage = model_->data(model_->index(r, 0), LayerTableModel::StageRole).toInt();
    if (stage != prev_stage) {
      close_stage(r);
      if (r > 0) {
        const int x = plot.left() + static_cast<int>(r * slot);
        p.setPen(QPen(QColor(60, 60, 60), 1.5, Qt::DashLine));
        p.drawLine(x, plot.top() - 4, x, plot.bottom() + 4);
      }
      prev_stage = stage;
      stage_start = r;
    }
    const double v = model_->data(model_->index(r, column_), LayerTableModel::RawRole).toDouble();
    const int h = static_cast<int>(v / vmax * plot.height());
    const QRect bar(plot.left() + static_cast<int>(r * slot + slot * 0.15), plot.bottom() - h,
                    std::max(1, static_cast<int>(slot * 0.7)), h);
    p.fillRect(bar, stage >= 0 ? stage_color(stage) : QColor(150, 150, 150));
  }
  close_stage(n);
  p.setPen(palette().color(QPalette::Text));
  const int every = std::max(1, static_cast<int>(40 / std::max(1.0, slot)));
  for (int r = 0; r < n; r += every) {
    const QString name = model_->data(model_->index(r, 0)).toString();
    p.save();
    p.translate(plot.left() + (r + 0.5) * slot, plot.bottom() + 4);
    p.rotate(30);
    p.drawText(0, 10, name);
    p.restore();
  }
}

}  // namespace pipescope::gui
