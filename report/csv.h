// The candidates of a tuning database as CSV (RFC 4180) for spreadsheets: one row per candidate of
// every key of every device block. Fields are quoted when they hold a comma, quote or line break;
// text that a spreadsheet would run as a formula (starting with = + - @ or a control character)
// is prefixed with ' so that opening the file never evaluates anything from the database.
#pragma once

#include <string>

#include "report/model.h"

namespace ktune::report {

std::string exportCsv(const DatabaseView& db);

}  // namespace ktune::report
