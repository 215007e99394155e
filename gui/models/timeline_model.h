// The timeline model: one row per event of a StepReport's timeline (ops on device
// tracks, transfers on link tracks, all-reduces), sorted by track then start time.
// It also answers what the Gantt view needs without widgets: the events of a track,
// which event lies under a time on a track (hover), and the tooltip text for it.
//   TimelineModel m; m.set_timeline(report.timeline, report.step_ns);
//   int e = m.event_at(track, t_ns, tolerance_ns);   // -1 when none
#pragma once

#include <QAbstractTableModel>
#include <set>
#include <vector>

#include "core/report.h"

namespace pipescope::gui {

class TimelineModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Track, Op, Stage, Microbatch, StartMs, DurationMs, ColumnCount };
  enum Role { RawRole = Qt::UserRole + 1 };

  using QAbstractTableModel::QAbstractTableModel;

  // `end_ns` is the step time; 0 takes the last event's end.
  void set_timeline(const Timeline& timeline, int64_t end_ns = 0);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  int track_count() const { return static_cast<int>(tracks_.size()); }
  const QString& track_name(int track) const { return tracks_[track]; }
  const std::vector<TimelineEvent>& events() const { return events_; }
  // Indices into events() of one track's events, by start time.
  const std::vector<int>& track_events(int track) const { return by_track_[track]; }
  int64_t end_ns() const { return end_ns_; }
  // The op categories present (forward, backward, ...), for the legend.
  const std::set<QString>& categories() const { return categories_; }
  // Busy time of a track (sum of its event durations; events on a device never overlap).
  int64_t busy_ns(int track) const;

  // Density mode: the busy fraction of tracks [first, end) in `bins` bins of `bin_ns`
  // from `start_ns`: bin b gets the time events cover inside [start + b w, start + (b+1) w),
  // summed over the tracks, divided by w x tracks (mean) or by w alone (sum: "how many
  // links are busy", for a collapsed link row), capped at 1 (transfers may overlap).
  enum class Combine { Mean, Sum };
  std::vector<float> busy_fraction(int first_track, int end_track, double start_ns, double bin_ns, int bins,
                                   Combine combine = Combine::Mean) const;
  // Mean duration of the events on device tracks (0 when none): how wide an op is drawn.
  double mean_op_ns() const { return mean_op_ns_; }

  // The event on `track` covering time t, or the nearest within `tolerance_ns`; -1 if none.
  int event_at(int track, int64_t t, int64_t tolerance_ns = 0) const;
  // "forward, stage 2, micro-batch 5\nstart 1.234 ms, duration 0.567 ms\ndevice 2"
  QString describe(int event) const;

 private:
  std::vector<QString> tracks_;
  std::vector<TimelineEvent> events_;
  std::vector<std::vector<int>> by_track_;
  int64_t end_ns_ = 0;
  double mean_op_ns_ = 0;
  std::set<QString> categories_;
};

}  // namespace pipescope::gui
