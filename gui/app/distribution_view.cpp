// Paints the sampled step-time histogram (gui/app/distribution_view.h).
#include "gui/app/distribution_view.h"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QVBoxLayout>

namespace pipescope::gui {

DistributionView::DistributionView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* controls = new QHBoxLayout;
  auto spin = [this, controls](const QString& label, double lo, double hi, double value, double step) {
    controls->addWidget(new QLabel(label, this));
    auto* s = new QDoubleSpinBox(this);
    s->setRange(lo, hi);
    s->setSingleStep(step);
    s->setValue(value);
    controls->addWidget(s);
    return s;
  };
  cv_ = spin("jitter CV", 0.0, 2.0, 0.05, 0.01);
  straggler_p_ = spin("straggler P", 0.0, 1.0, 0.0, 0.01);
  straggler_slowdown_ = spin("slowdown", 1.0, 10.0, 1.5, 0.1);
  auto* sample = new QPushButton("Sample 1000 steps", this);
  controls->addWidget(sample);
  controls->addStretch(1);
  layout->addLayout(controls);
  layout->addStretch(1);
  summary_ = new QLabel("Press Sample to replay the current plan's step under jitter.", this);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  connect(sample, &QPushButton::clicked, this, &DistributionView::sampleRequested);
}

JitterSpec DistributionView::spec() const {
  JitterSpec j;
  j.samples = 1000;
  j.seed = 1;
  j.cv = cv_->value();
  j.straggler_probability = straggler_p_->value();
  j.straggler_slowdown = straggler_slowdown_->value();
  return j;
}

void DistributionView::set_histogram(const StepHistogram& h) {
  histogram_ = h;
  if (h.empty()) {
    summary_->setText("Press Sample to replay the current plan's step under jitter.");
    update();
    return;
  }
  QString text = QString("%1 samples: mean %2 ms, p50 %3, p90 %4, p99 %5 (deterministic %6). Bottleneck of the "
                         "critical path, samples per stage:")
                     .arg(h.samples).arg(h.mean_ms, 0, 'f', 3).arg(h.p50_ms, 0, 'f', 3).arg(h.p90_ms, 0, 'f', 3)
                     .arg(h.p99_ms, 0, 'f', 3).arg(h.deterministic_ms, 0, 'f', 3);
  for (std::size_t s = 0; s < h.bottleneck_counts.size(); ++s) {
    text += QString(" %1: %2").arg(s).arg(h.bottleneck_counts[s]);
  }
  summary_->setText(text);
  update();
}

QRect DistributionView::chart_rect() const { return rect().adjusted(50, 50, -20, -70); }

void DistributionView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QRect r = chart_rect();
  p.drawRect(r);
  if (histogram_.empty() || histogram_.counts.empty()) return;
  const double top = static_cast<double>(histogram_.max_count());
  const int n = static_cast<int>(histogram_.counts.size());
  const double span = histogram_.bin_ms * n;
  auto x_of = [&](double ms) { return r.left() + (ms - histogram_.lo_ms) / span * r.width(); };
  p.setBrush(QColor(70, 130, 180));
  for (int i = 0; i < n; ++i) {
    const double h = histogram_.counts[i] / top * r.height();
    p.drawRect(QRectF(r.left() + static_cast<double>(i) * r.width() / n, r.bottom() - h, static_cast<double>(r.width()) / n, h));
  }
  auto mark = [&](double ms, const QColor& c, const QString& label) {
    const double x = std::clamp(x_of(ms), static_cast<double>(r.left()), static_cast<double>(r.right()));
    p.setPen(QPen(c, 2));
    p.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()));
    p.drawText(QPointF(x + 3, r.top() + 14), label);
  };
  mark(histogram_.deterministic_ms, Qt::darkGray, "det");
  mark(histogram_.p50_ms, QColor(0, 140, 0), "p50");
  mark(histogram_.p99_ms, QColor(200, 0, 0), "p99");
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(QPointF(r.left(), r.bottom() + 16), QString("%1 ms").arg(histogram_.lo_ms, 0, 'f', 3));
  const QString hi = QString("%1 ms").arg(histogram_.lo_ms + span, 0, 'f', 3);
  p.drawText(QPointF(r.right() - p.fontMetrics().horizontalAdvance(hi), r.bottom() + 16), hi);
}

}  // namespace pipescope::gui
