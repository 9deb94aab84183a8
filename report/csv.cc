#include "report/csv.h"

#include <cstdio>

#include "base/format.h"


namespace ktune::report {
namespace {

std::string field(const std::string& s) {
  std::string v = s;
  if (!v.empty() && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@' ||
                     static_cast<unsigned char>(v[0]) < 0x20))
    v.insert(v.begin(), '\'');
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string number(double v) { return strprintf("%.9g", v); }

}  // namespace

std::string exportCsv(const DatabaseView& db) {
  std::string o =
      "family,device_name,arch,backend,driver_version,compiler,compiler_version,key,winner,source,"
      "config,status,reason,median_ms,p20_ms,p80_ms,min_ms,max_ms,mean_ms,std_ms,runs,max_error,"
      "registers,occupancy,code_object_key,date\n";
  for (const auto& dev : db.devices) {
    const Validator& v = dev.validator;
    const std::string prefix = field(db.family) + "," + field(v.device_name) + "," + field(v.arch) +
                               "," + field(v.backend) + "," + field(v.driver_version) + "," +
                               field(v.compiler) + "," + field(v.compiler_version) + ",";
    for (const auto& k : dev.keys) {
      for (const auto& c : k.candidates) {
        const auto& r = c.result;
        const auto& s = r.stats;
        o += prefix + field(k.entry.key) + "," + (c.is_winner ? "1" : "0") + "," +
             field(r.source) + "," + field(r.config) + "," + codeName(r.status) + "," +
             field(r.reason) + "," + number(s.median_ms) + "," + number(s.p20_ms) + "," +
             number(s.p80_ms) + "," + number(s.min_ms) + "," + number(s.max_ms) + "," +
             number(s.mean_ms) + "," + number(s.std_ms) + "," + std::to_string(s.runs) + "," +
             number(r.max_error) + "," + (c.has_resources ? std::to_string(c.registers) : "") +
             "," + (c.has_occupancy ? number(c.occupancy) : "") + "," +
             field(r.code_object_key) + "," + field(r.date) + "\n";
      }
    }
  }
  return o;
}

}  // namespace ktune::report
