#include "gui/models/timeline_model.h"

#include <algorithm>

namespace pipescope::gui {

static QString ms(int64_t ns) { return QString::number(static_cast<double>(ns) / 1e6, 'f', 3); }

void TimelineModel::set_timeline(const Timeline& timeline, int64_t end_ns) {
  beginResetModel();
  tracks_.clear();
  for (const std::string& t : timeline.tracks) tracks_.push_back(QString::fromStdString(t));
  events_ = timeline.events;
  std::stable_sort(events_.begin(), events_.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
    return a.track != b.track ? a.track < b.track : a.start_ns < b.start_ns;
  });
  by_track_.assign(tracks_.size(), {});
  end_ns_ = end_ns;
  for (int i = 0; i < static_cast<int>(events_.size()); ++i) {
    const TimelineEvent& e = events_[i];
    if (e.track >= 0 && e.track < static_cast<int>(tracks_.size())) by_track_[e.track].push_back(i);
    if (end_ns == 0) end_ns_ = std::max(end_ns_, e.start_ns + e.duration_ns);
  }
  std::set<std::string> categories;
  for (const TimelineEvent& e : events_) categories.insert(e.category);
  categories_.clear();
  for (const std::string& c : categories) categories_.insert(QString::fromStdString(c));
  int64_t device_ns = 0, position_ops = 0;
  for (int t = 0; t < track_count() && tracks_[t].startsWith("device "); ++t) {
    device_ns += busy_ns(t);
    position_ops += static_cast<int64_t>(by_track_[t].size());
  }
  mean_op_ns_ = position_ops > 0 ? static_cast<double>(device_ns) / static_cast<double>(position_ops) : 0;
  endResetModel();
}

int TimelineModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(events_.size());
}

int TimelineModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TimelineModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const TimelineEvent& e = events_[index.row()];
  if (role == RawRole) {
    switch (index.column()) {
      case Track: return e.track;
      case Op: return QString::fromStdString(e.category);
      case Stage: return e.stage;
      case Microbatch: return e.microbatch;
      case StartMs: return static_cast<qlonglong>(e.start_ns);
      case DurationMs: return static_cast<qlonglong>(e.duration_ns);
    }
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Track: return e.track >= 0 && e.track < track_count() ? tracks_[e.track] : QString::number(e.track);
      case Op: return QString::fromStdString(e.category);
      case Stage: return e.stage;
      case Microbatch: return e.microbatch;
      case StartMs: return ms(e.start_ns);
      case DurationMs: return ms(e.duration_ns);
    }
  }
  if (role == Qt::ToolTipRole) return describe(index.row());
  return {};
}

QVariant TimelineModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (o == Qt::Vertical) return section;
  static const char* names[] = {"Track", "Op", "Stage", "Micro-batch", "Start ms", "Duration ms"};
  return section >= 0 && section < ColumnCount ? QVariant(QString(names[section])) : QVariant();
}

int64_t TimelineModel::busy_ns(int track) const {
  int64_t busy = 0;
  for (int i : by_track_[track]) busy += events_[i].duration_ns;
  return busy;
}

std::vector<float> TimelineModel::busy_fraction(int first, int end, double start_ns, double bin_ns, int bins,
                                                Combine combine) const {
  std::vector<double> covered(static_cast<std::size_t>(std::max(0, bins)), 0.0);
  if (bins <= 0 || bin_ns <= 0) return {};
  const double stop_ns = start_ns + bin_ns * bins;
  first = std::max(0, first);
  end = std::min(end, track_count());
  for (int t = first; t < end; ++t) {
    const std::vector<int>& ids = by_track_[t];
    // Events start in order; skip those starting before the window (a long one may still
    // reach into it, so step back over a few).
    auto it = std::lower_bound(ids.begin(), ids.end(), start_ns,
                               [&](int i, double time) { return static_cast<double>(events_[i].start_ns) < time; });
    it -= std::min<std::ptrdiff_t>(it - ids.begin(), 64);
    for (; it != ids.end(); ++it) {
      const TimelineEvent& e = events_[*it];
      const double a = std::max(start_ns, static_cast<double>(e.start_ns));
      const double b = std::min(stop_ns, static_cast<double>(e.start_ns + e.duration_ns));
      if (static_cast<double>(e.start_ns) >= stop_ns) break;
      if (b <= a) continue;
      int bin = static_cast<int>((a - start_ns) / bin_ns);
      for (double lo = a; lo < b && bin < bins; ++bin) {
        const double hi = std::min(b, start_ns + (bin + 1) * bin_ns);
        covered[static_cast<std::size_t>(bin)] += hi - lo;
        lo = hi;
      }
    }
  }
  std::vector<float> out(covered.size());
  const double full = bin_ns * (combine == Combine::Sum ? 1 : std::max(1, end - first));
  for (std::size_t b = 0; b < covered.size(); ++b) out[b] = static_cast<float>(std::min(1.0, covered[b] / full));
  return out;
}

int TimelineModel::event_at(int track, int64_t t, int64_t tolerance_ns) const {
  if (track < 0 || track >= track_count()) return -1;
  const std::vector<int>& ids = by_track_[track];
  // Events of a track are sorted by start; links may overlap, so scan back from the
  // first event starting after t while earlier events could still cover t.
  auto it = std::upper_bound(ids.begin(), ids.end(), t,
                             [&](int64_t time, int i) { return time < events_[i].start_ns; });
  int best = -1;
  int64_t best_gap = tolerance_ns + 1;
  auto consider = [&](int i) {
    const TimelineEvent& e = events_[i];
    const int64_t gap = t < e.start_ns ? e.start_ns - t : (t > e.start_ns + e.duration_ns ? t - e.start_ns - e.duration_ns : 0);
    if (gap < best_gap) {
      best_gap = gap;
      best = i;
    }
  };
  if (it != ids.end()) consider(*it);
  for (auto back = it; back != ids.begin();) {
    --back;
    consider(*back);
    if (best_gap == 0) break;
    if (it - back > 64) break;  // overlapping link transfers are few; stop scanning far back
  }
  return best;
}

QString TimelineModel::describe(int i) const {
  if (i < 0 || i >= static_cast<int>(events_.size())) return {};
  const TimelineEvent& e = events_[i];
  QString what = QString::fromStdString(e.category);
  if (e.stage >= 0) what += QString(", stage %1").arg(e.stage);
  if (e.microbatch >= 0) what += QString(", micro-batch %1").arg(e.microbatch);
  QString where = e.track >= 0 && e.track < track_count() ? tracks_[e.track] : QString();
  return QString("%1\nstart %2 ms, duration %3 ms\n%4").arg(what, ms(e.start_ns), ms(e.duration_ns), where);
}

}  // namespace pipescope::gui
