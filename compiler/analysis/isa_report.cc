#include "compiler/analysis/isa_report.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

namespace ktune {
namespace {

struct Line {
  std::string mnemonic;  // lower/upper case as written
  std::string text;      // the whole (trimmed) line
  int64_t addr = -1;     // byte offset from a disassembler comment ("// 0000000019A0: ..."), else -1
};

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

bool startsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// Width in bits of an AMDGCN memory mnemonic suffix: dword=32, dwordx4=128, b128=128, ubyte=8...
int amdWidth(const std::string& m) {
  static const std::regex dx(R"(dwordx(\d))"), bn(R"(_b(\d+)$)"), d16(R"(short|d16)"),
      byte(R"(byte)");
  std::smatch s;
  int w = 0;
  if (std::regex_search(m, s, dx))
    w = 32 * std::stoi(s[1]);
  else if (m.find("dword") != std::string::npos)
    w = 32;
  else if (std::regex_search(m, s, bn))
    w = std::stoi(s[1]);
  else if (std::regex_search(m, byte))
    w = 8;
  else if (std::regex_search(m, d16))
    w = 16;
  else if (std::regex_search(m, s, std::regex(R"(_[ui](\d+)$)")))
    w = std::stoi(s[1]);
  if (m.find("read2") != std::string::npos || m.find("write2") != std::string::npos ||
      m.find("load_2addr") != std::string::npos || m.find("store_2addr") != std::string::npos)
    w *= 2;
  return w;
}

// PTX: ld.global.nc.v4.u32 -> 128; st.shared.v2.f32 -> 64; ld.global.b16 -> 16.
int ptxWidth(const std::string& m) {
  static const std::regex vec(R"(\.v(\d))"), ty(R"(\.[a-z]+(\d+)$)");
  std::smatch s;
  int n = std::regex_search(m, s, vec) ? std::stoi(s[1]) : 1;
  int bits = std::regex_search(m, s, ty) ? std::stoi(s[1]) : 32;
  return n * bits;
}

// SASS: LDG.E.128 -> 128, LDG.E.64 -> 64, LDG.E.U16 -> 16, LDG.E -> 32, LDS.128 -> 128.
int sassWidth(const std::string& m) {
  static const std::regex w(R"(\.(?:U|S)?(8|16|32|64|128)(?:\.|$))");
  std::smatch s;
  return std::regex_search(m, s, w) ? std::stoi(s[1]) : 32;
}

}  // namespace

int IsaReport::globalLoads(int bits) const {
  auto it = global_loads.find(bits);
  return it == global_loads.end() ? 0 : it->second;
}

int IsaReport::matrixCount(const std::string& prefix) const {
  int n = 0;
  for (const auto& [k, v] : matrix)
    if (k.rfind(prefix, 0) == 0) n += v;
  return n;
}

IsaReport analyzeIsa(const std::string& text, IsaKind kind) {
  IsaReport r;
  r.kind = kind;
  std::vector<Line> lines;
  std::map<std::string, size_t> label_at;        // label -> index in `lines`
  std::vector<std::pair<size_t, size_t>> loops;  // [label index, branch index]
  std::vector<std::pair<size_t, std::string>> branches;
  std::istringstream in(text);
  std::string raw;
  while (std::getline(in, raw)) {
    std::string l = trim(raw);
    if (l.find("Spill") != std::string::npos || l.find("Reload") != std::string::npos)
      ++r.spill_comments;
    if (kind == IsaKind::kSass) {  // "/*0090*/  @P0 LDG.E.128 R4, desc[UR4][R2.64] ;"
      if (startsWith(l, "/*")) {
        auto e = l.find("*/");
        if (e != std::string::npos) l = trim(l.substr(e + 2));
      }
    }
    // comgr's disassembly of an executable has no labels: branches carry a signed word offset
    // and each line's address sits in its comment, so remember the address.
    int64_t addr = -1;
    if (kind == IsaKind::kAmdgcn) {
      auto c = l.find("// ");
      if (c != std::string::npos) {
        size_t b = c + 3, e = b;
        while (e < l.size() && std::isxdigit(static_cast<unsigned char>(l[e]))) ++e;
        if (e - b >= 8 && e < l.size() && l[e] == ':') addr = std::stoll(l.substr(b, e - b), nullptr, 16);
      }
    }
    // Drop comments.
    for (const char* c : {"//", ";;"}) {
      auto p = l.find(c);
      if (p != std::string::npos) l = trim(l.substr(0, p));
    }
    if (kind == IsaKind::kAmdgcn) {
      auto p = l.find(';');
      if (p != std::string::npos) l = trim(l.substr(0, p));
    }
    if (l.empty()) continue;
    if (l.back() == ':' && l.find(' ') == std::string::npos) {  // label
      label_at[l.substr(0, l.size() - 1)] = lines.size();
      continue;
    }
    if (l[0] == '.' || l[0] == '{' || l[0] == '}' || l[0] == '#') continue;  // directives
    if (l[0] == '@') {                                                       // predicate
      auto sp = l.find(' ');
      if (sp == std::string::npos) continue;
      l = trim(l.substr(sp + 1));
    }
    std::string m = l.substr(0, l.find_first_of(" \t"));
    if (!m.empty() && m.back() == ';') m.pop_back();
    lines.push_back({m, l, addr});
  }
  std::map<int64_t, size_t> line_at_addr;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].addr >= 0) line_at_addr[lines[i].addr] = i;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& m = lines[i].mnemonic;
    const std::string& l = lines[i].text;
    ++r.instructions;
    std::string target;
    if (kind == IsaKind::kAmdgcn) {
      if (startsWith(m, "global_load") || startsWith(m, "flat_load") ||
          (startsWith(m, "buffer_load") && l.find("off, s[0:3]") == std::string::npos))
        ++r.global_loads[amdWidth(m)];
      else if (startsWith(m, "global_store") || startsWith(m, "flat_store") ||
               (startsWith(m, "buffer_store") && l.find("off, s[0:3]") == std::string::npos))
        ++r.global_stores[amdWidth(m)];
      else if (startsWith(m, "ds_read") || startsWith(m, "ds_load"))
        ++r.lds_loads[amdWidth(m)];
      else if (startsWith(m, "ds_write") || startsWith(m, "ds_store"))
        ++r.lds_stores[amdWidth(m)];
      else if (startsWith(m, "v_mfma") || startsWith(m, "v_smfmac") || startsWith(m, "v_wmma")) {
        std::string k = m;
        for (const char* suf : {"_e64", "_vgprcd"}) {
          auto p = k.find(suf);
          if (p != std::string::npos) k = k.substr(0, p);
        }
        ++r.matrix[k];
      } else if (startsWith(m, "s_waitcnt"))
        ++r.waitcnt_total;
      else if (startsWith(m, "scratch_") || startsWith(m, "buffer_"))
        ++r.scratch_ops;  // buffer ops on s[0:3] are the pre-gfx940 scratch path
      if (startsWith(m, "s_branch") || startsWith(m, "s_cbranch")) {
        auto sp = l.find_first_of(" \t");
        if (sp != std::string::npos) target = trim(l.substr(sp));
        // Numeric operand (comgr): target = next instruction + simm16 * 4.
        if (!target.empty() && lines[i].addr >= 0 &&
            std::all_of(target.begin(), target.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
          const int64_t simm = static_cast<int16_t>(static_cast<uint16_t>(std::stoll(target)));
          auto it = line_at_addr.find(lines[i].addr + 4 + simm * 4);
          if (it != line_at_addr.end() && it->second <= i) loops.emplace_back(it->second, i);
          target.clear();
        }
      }
    } else if (kind == IsaKind::kPtx) {
      if (startsWith(m, "ld.global"))
        ++r.global_loads[ptxWidth(m)];
      else if (startsWith(m, "st.global"))
        ++r.global_stores[ptxWidth(m)];
      else if (startsWith(m, "ld.shared"))
        ++r.lds_loads[ptxWidth(m)];
      else if (startsWith(m, "st.shared"))
        ++r.lds_stores[ptxWidth(m)];
      else if (startsWith(m, "ldmatrix"))  // a warp's 8x8 b16 tiles: 16 bytes per lane
        ++r.lds_loads[128];
      else if (startsWith(m, "cp.async.cg") || startsWith(m, "cp.async.ca")) {
        // global -> shared without registers: a 16-byte global load and a shared store
        ++r.global_loads[128];
        ++r.lds_stores[128];
      } else if (startsWith(m, "cp.async.bulk.tensor") || startsWith(m, "cp.async.bulk.shared"))
        ++r.lds_stores[128];  // TMA tile loads into shared memory
      else if (startsWith(m, "stmatrix"))
        ++r.lds_stores[128];
      else if (startsWith(m, "ld.local") || startsWith(m, "st.local"))
        ++r.scratch_ops;
      else if (startsWith(m, "mma.sync") || startsWith(m, "wgmma.mma_async")) {
        static const std::regex shape(R"(^(.*?\.m\d+n\d+k\d+))");
        std::smatch s;
        ++r.matrix[std::regex_search(m, s, shape) ? std::string(s[1]) : m];
      } else if (startsWith(m, "cp.async.wait") || startsWith(m, "cp.async.bulk.wait") ||
                 startsWith(m, "wgmma.wait_group"))
        ++r.waitcnt_total;
      if (startsWith(m, "bra")) {
        auto sp = l.find_first_of(" \t");
        if (sp != std::string::npos) target = trim(l.substr(sp));
        if (!target.empty() && target.back() == ';') target.pop_back();
      }
    } else {  // SASS
      if (startsWith(m, "LDG"))
        ++r.global_loads[sassWidth(m)];
      else if (startsWith(m, "STG"))
        ++r.global_stores[sassWidth(m)];
      else if (startsWith(m, "LDGSTS"))
        ++r.global_loads[sassWidth(m)];
      else if (startsWith(m, "LDSM"))
        ++r.lds_loads[128];
      else if (startsWith(m, "LDS"))
        ++r.lds_loads[sassWidth(m)];
      else if (startsWith(m, "STS"))
        ++r.lds_stores[sassWidth(m)];
      else if (startsWith(m, "LDL") || startsWith(m, "STL"))
        ++r.scratch_ops;
      else if (startsWith(m, "HMMA") || startsWith(m, "HGMMA") || startsWith(m, "IMMA")) {
        auto second = m.find('.', m.find('.') + 1);
        ++r.matrix[startsWith(m, "HGMMA") ? std::string("HGMMA") : m.substr(0, second)];
      } else if (startsWith(m, "DEPBAR") || startsWith(m, "WARPGROUP.DEPBAR"))
        ++r.waitcnt_total;
      if (startsWith(m, "BRA")) {
        static const std::regex lab(R"(`?\(?(\.L_x_\d+)\)?`?)");
        std::smatch s;
        if (std::regex_search(l, s, lab)) target = s[1];
      }
    }
    if (!target.empty()) {
      auto it = label_at.find(target);
      if (it != label_at.end() && it->second <= i) loops.emplace_back(it->second, i);
    }
  }
  r.loops = static_cast<int>(loops.size());
  // Innermost: loops whose range contains no other loop.
  std::set<size_t> counted;
  for (const auto& a : loops) {
    bool inner = true;
    for (const auto& b : loops)
      if (&a != &b && b.first >= a.first && b.second <= a.second &&
          (b.first != a.first || b.second != a.second))
        inner = false;
    if (!inner) continue;
    ++r.innermost_loops;
    for (size_t i = a.first; i <= a.second && i < lines.size(); ++i) {
      const std::string& m = lines[i].mnemonic;
      const bool wait =
          kind == IsaKind::kAmdgcn ? startsWith(m, "s_waitcnt")
          : kind == IsaKind::kPtx
              ? (startsWith(m, "cp.async.wait") || startsWith(m, "cp.async.bulk.wait") ||
                 startsWith(m, "wgmma.wait_group"))
              : (startsWith(m, "DEPBAR") || startsWith(m, "WARPGROUP.DEPBAR"));
      if (wait && counted.insert(i).second) ++r.waitcnt_in_loop;
    }
  }
  return r;
}

std::string IsaReport::toJson() const {
  auto widths = [](const std::map<int, int>& m) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [w, n] : m) j[std::to_string(w)] = n;
    return j;
  };
  nlohmann::json j;
  j["kind"] = kind == IsaKind::kAmdgcn ? "amdgcn" : kind == IsaKind::kPtx ? "ptx" : "sass";
  j["global_loads"] = widths(global_loads);
  j["global_stores"] = widths(global_stores);
  j["lds_loads"] = widths(lds_loads);
  j["lds_stores"] = widths(lds_stores);
  j["matrix"] = matrix;
  j["waitcnt_total"] = waitcnt_total;
  j["waitcnt_in_loop"] = waitcnt_in_loop;
  j["loops"] = loops;
  j["innermost_loops"] = innermost_loops;
  j["scratch_ops"] = scratch_ops;
  j["spill_comments"] = spill_comments;
  j["instructions"] = instructions;
  return j.dump();
}

std::string IsaReport::text() const {
  auto widths = [](const std::map<int, int>& m) {
    std::string s;
    for (const auto& [w, n] : m)
      s += (s.empty() ? "" : ", ") + std::to_string(n) + "x" + std::to_string(w) + "b";
    return s.empty() ? std::string("none") : s;
  };
  std::ostringstream o;
  o << "global loads: " << widths(global_loads) << "; stores: " << widths(global_stores) << "\n";
  o << "LDS/shared loads: " << widths(lds_loads) << "; stores: " << widths(lds_stores) << "\n";
  o << "matrix:";
  if (matrix.empty()) o << " none";
  for (const auto& [k, n] : matrix) o << " " << k << " x" << n;
  o << "\nwaits: " << waitcnt_total << " (" << waitcnt_in_loop << " in " << innermost_loops
    << " innermost loop(s) of " << loops << ")\n";
  o << "scratch ops: " << scratch_ops << ", spill annotations: " << spill_comments
    << ", instructions: " << instructions << "\n";
  return o.str();
}

}  // namespace ktune
