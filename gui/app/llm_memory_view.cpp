// Stacked bars over the plot rectangle; the y axis reaches 1.08 x the highest bar or the capacity.
#include "gui/app/llm_memory_view.h"

#include <QPainter>
#include <algorithm>

#include "gui/models/palette.h"

namespace pipescope::gui {

namespace {
constexpr int kHeader = 22, kLegend = 20, kLeft = 56, kBottom = 18;
double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }
}  // namespace

LlmMemoryView::LlmMemoryView(QWidget* parent) : QWidget(parent) { setMinimumHeight(160); }

void LlmMemoryView::set_model(const LlmMemoryModel* model) {
  model_ = model;
  if (model_) connect(model_, &QAbstractItemModel::modelReset, this, qOverload<>(&QWidget::update));
  update();
}

QColor LlmMemoryView::part_color(int part) {
  static const QColor colors[] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(148, 103, 189), stage_color(2)};
  return colors[std::clamp(part, 0, 3)];
}

QRect LlmMemoryView::plot_rect() const {
  return QRect(kLeft, kHeader, std::max(1, width() - kLeft - 8), std::max(1, height() - kHeader - kLegend - kBottom));
}

QRect LlmMemoryView::bar_rect(int rank) const {
  if (!model_ || rank < 0 || rank >= model_->rowCount()) return {};
  const QRect plot = plot_rect();
  const double slot = static_cast<double>(plot.width()) / model_->rowCount();
  const double ymax = std::max(1.0, 1.08 * model_->max_bytes());
  const int h = static_cast<int>(plot.height() * model_->bars()[rank].total() / ymax);
  const int x = plot.left() + static_cast<int>(slot * rank + slot * 0.15);
  return QRect(x, plot.bottom() - h, std::max(1, static_cast<int>(slot * 0.7)), h);
}

void LlmMemoryView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  p.setPen(palette().color(QPalette::Text));
  QString head = "Memory per GPU of each pipeline rank by kind, GiB = 2^30 bytes";
  if (model_ && !model_->source().isEmpty()) head += " (" + model_->source() + ")";
  if (model_ && model_->capacity_bytes() > 0) {
    const double capacity = static_cast<double>(model_->capacity_bytes());
    head += QString("   capacity %1 GiB (%2 GB)%3")
                .arg(gib(capacity), 0, 'f', 1)
                .arg(capacity / 1e9, 0, 'f', 1)
                .arg(model_->capacity_on_scale() ? ": dashed line" : ", above the chart");
  }
  p.drawText(QRect(8, 2, width() - 16, kHeader - 4), Qt::AlignLeft | Qt::AlignVCenter, head);
  if (!model_ || model_->rowCount() == 0) {
    p.drawText(rect(), Qt::AlignCenter, model_ ? model_->message() : QString("no plan"));
    return;
  }
  const QRect plot = plot_rect();
  const double ymax = std::max(1.0, 1.08 * model_->max_bytes());
  auto y_of = [&](double bytes) { return plot.bottom() - static_cast<int>(plot.height() * bytes / ymax); };
  for (int r = 0; r < model_->rowCount(); ++r) {
    const QRect bar = bar_rect(r);
    double below = 0;
    for (int part = 0; part < 4; ++part) {
      const double bytes = model_->bars()[r].parts[part];
      p.fillRect(QRect(QPoint(bar.left(), y_of(below + bytes)), QPoint(bar.right(), y_of(below))), part_color(part));
      below += bytes;
    }
    p.setPen(model_->fits(r) ? palette().color(QPalette::Text) : does_not_fit_color());
    p.drawRect(bar);
    p.drawText(QRect(bar.left() - 20, plot.bottom() + 2, bar.width() + 40, kBottom - 2), Qt::AlignCenter,
               QString("rank %1").arg(model_->bars()[r].rank));
    p.drawText(QRect(bar.left() - 20, bar.top() - 16, bar.width() + 40, 15), Qt::AlignCenter,
               QString("%1 GiB").arg(gib(model_->bars()[r].total()), 0, 'f', 2));
  }
  p.setPen(palette().color(QPalette::Text));
  p.drawText(QRect(0, plot.top(), kLeft - 4, 16), Qt::AlignRight | Qt::AlignVCenter, QString("%1 GiB").arg(gib(ymax), 0, 'f', 1));
  if (model_->capacity_on_scale()) {
    QPen dashed(does_not_fit_color(), 1, Qt::DashLine);
    p.setPen(dashed);
    const int y = y_of(static_cast<double>(model_->capacity_bytes()));
    p.drawLine(plot.left(), y, plot.right(), y);
  }
  int x = kLeft;
  const int ly = height() - kLegend + 4;
  for (int part = 0; part < 4; ++part) {
    p.fillRect(QRect(x, ly, 12, 12), part_color(part));
    p.setPen(palette().color(QPalette::Text));
    const QString label = LlmMemoryModel::kPartNames[part];
    p.drawText(QRect(x + 16, ly - 2, 140, 16), Qt::AlignLeft | Qt::AlignVCenter, label);
    x += 24 + p.fontMetrics().horizontalAdvance(label);
  }
}

}  // namespace pipescope::gui
