#pragma once
// A process's timeline for finding where a tuning run's wall time goes (KTUNE_TIMELINE=FILE):
// each mark appends one line "EPOCH_MS PID LABEL DETAIL" to FILE (opened for appending, one
// write per line, so the tuner and its workers can share it). Off, a mark costs one load.
#include <string>

namespace ktune {

// Whether KTUNE_TIMELINE names a file (read once).
bool timelineOn();
// Appends a mark now (nothing when off). `detail` is free text on the same line.
void timelineMark(const char* label, const std::string& detail = std::string());
// Milliseconds since this process was started by the kernel (exec and loading included), from
// /proc; 0 where /proc cannot say.
double processAgeMs();

}  // namespace ktune
