#include "compiler/analysis/isa_report.h"

#include "compiler/analysis/isa_ops.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <tuple>
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

using namespace isa_detail;  // NOLINT: the instruction classes (isa_ops.h)

// Walks back from the wait at `w` through the loop body [first, last], wrapping around: true
// when a global load of the loop comes before any matrix op.
bool waitsForUnoverlappedLoad(const std::vector<Op>& ops, size_t first, size_t last, size_t w) {
  const size_t n = last - first + 1;
  for (size_t step = 1; step < n; ++step) {
    const size_t i = first + (w - first + n - step) % n;
    if (ops[i].cls == OpClass::kMatrix) return false;
    if (ops[i].cls == OpClass::kGlobalLoad) return true;
  }
  return false;
}

// Counts of one loop's range.
LoopStats loopStats(const std::vector<Op>& ops, size_t first, size_t last) {
  LoopStats st;
  st.first_line = static_cast<int>(first);
  st.last_line = static_cast<int>(last);
  for (size_t i = first; i <= last && i < ops.size(); ++i) {
    const Op& o = ops[i];
    ++st.instructions;
    addOp(o, &st.global_loads, &st.global_stores, &st.lds_loads, &st.lds_stores, &st.matrix);
    if (o.cls == OpClass::kLdsLoad && o.count == 2) ++st.lds_read2;
    if (o.cls == OpClass::kLdsStore && o.count == 2) ++st.lds_write2;
    if (o.cls == OpClass::kMatrix) ++st.matrix_total;
    if (o.cls == OpClass::kScratch) ++st.scratch_ops;
    st.accvgpr_moves += o.accvgpr;
    st.ldmatrix += o.ldmatrix;
    if (o.cls != OpClass::kWait) continue;
    ++st.waits;
    if (o.vmcnt >= 0) {
      ++st.vm_waits;
      st.min_vmcnt = st.min_vmcnt < 0 ? o.vmcnt : std::min(st.min_vmcnt, o.vmcnt);
      if (o.vmcnt == 0 && waitsForUnoverlappedLoad(ops, first, last, i)) ++st.vmcnt0_unoverlapped;
    }
    if (o.lgkmcnt >= 0) {
      ++st.lgkm_waits;
      st.min_lgkmcnt = st.min_lgkmcnt < 0 ? o.lgkmcnt : std::min(st.min_lgkmcnt, o.lgkmcnt);
    }
  }
  return st;
}

// The instructions of `text` (labels, directives and comments dropped, predicates stripped);
// `label_at` gets each label's instruction index. Counts spill comments into `r`.
std::vector<Line> parseLines(const std::string& text, IsaKind kind, IsaReport* r,
                             std::map<std::string, size_t>* label_at) {
  std::vector<Line> lines;
  std::istringstream in(text);
  std::string raw;
  while (std::getline(in, raw)) {
    std::string l = trim(raw);
    if (l.find("Spill") != std::string::npos || l.find("Reload") != std::string::npos)
      ++r->spill_comments;
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
      (*label_at)[l.substr(0, l.size() - 1)] = lines.size();
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
  return lines;
}

// The branches of a parsed listing: each instruction's target index (-1: none) and the loops
// (backward branches) as [target, branch] index pairs.
struct Branches {
  std::vector<long> target_of;
  std::vector<std::pair<size_t, size_t>> loops;
};

// The label a branch at `lines[i]` names (empty: none, or resolved by address into `br`).
std::string branchLabel(const std::vector<Line>& lines, size_t i, IsaKind kind,
                        const std::map<int64_t, size_t>& line_at_addr, Branches* br) {
  const std::string& m = lines[i].mnemonic;
  const std::string& l = lines[i].text;
  std::string target;
  if (kind == IsaKind::kAmdgcn) {
    if (startsWith(m, "s_branch") || startsWith(m, "s_cbranch")) {
      auto sp = l.find_first_of(" \t");
      if (sp != std::string::npos) target = trim(l.substr(sp));
      // Numeric operand (comgr): target = next instruction + simm16 * 4.
      if (!target.empty() && lines[i].addr >= 0 &&
          std::all_of(target.begin(), target.end(),
                      [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
        const int64_t simm = static_cast<int16_t>(static_cast<uint16_t>(std::stoll(target)));
        auto it = line_at_addr.find(lines[i].addr + 4 + simm * 4);
        if (it != line_at_addr.end()) br->target_of[i] = static_cast<long>(it->second);
        if (it != line_at_addr.end() && it->second <= i) br->loops.emplace_back(it->second, i);
        target.clear();
      }
    }
  } else if (kind == IsaKind::kPtx) {
    if (startsWith(m, "bra")) {
      auto sp = l.find_first_of(" \t");
      if (sp != std::string::npos) target = trim(l.substr(sp));
      if (!target.empty() && target.back() == ';') target.pop_back();
    }
  } else if (startsWith(m, "BRA")) {
    static const std::regex lab(R"(`?\(?(\.L_x_\d+)\)?`?)");
    std::smatch sm;
    if (std::regex_search(l, sm, lab)) target = sm[1];
  }
  return target;
}

// Classifies every instruction into `ops` (and the report's totals) and finds the branches.
Branches classifyLines(const std::vector<Line>& lines, IsaKind kind,
                       const std::map<std::string, size_t>& label_at, IsaReport* r,
                       std::vector<Op>* ops) {
  std::map<int64_t, size_t> line_at_addr;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].addr >= 0) line_at_addr[lines[i].addr] = i;
  ops->assign(lines.size(), Op());
  Branches br;
  br.target_of.assign(lines.size(), -1);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& m = lines[i].mnemonic;
    const std::string& l = lines[i].text;
    ++r->instructions;
    ++r->mnemonics[m];
    const Op o = kind == IsaKind::kAmdgcn ? classifyAmd(m, l)
                 : kind == IsaKind::kPtx  ? classifyPtx(m, l)
                                          : classifySass(m);
    (*ops)[i] = o;
    addOp(o, &r->global_loads, &r->global_stores, &r->lds_loads, &r->lds_stores, &r->matrix);
    // cp.async and TMA copies move global memory into shared memory without registers: counted as
    // the global load above and as the shared-memory store they also are.
    if (kind == IsaKind::kPtx && (startsWith(m, "cp.async.cg") || startsWith(m, "cp.async.ca") ||
                                  startsWith(m, "cp.async.bulk.tensor")))
      ++r->lds_stores[128];
    if (o.cls == OpClass::kWait) ++r->waitcnt_total;
    if (o.cls == OpClass::kScratch) ++r->scratch_ops;
    const std::string target = branchLabel(lines, i, kind, line_at_addr, &br);
    if (!target.empty()) {
      auto it = label_at.find(target);
      if (it != label_at.end()) br.target_of[i] = static_cast<long>(it->second);
      if (it != label_at.end() && it->second <= i) br.loops.emplace_back(it->second, i);
    }
  }
  return br;
}

// Block placement often puts part of a loop body after its backward branch, reached by a forward
// branch and jumping back with an unconditional branch (e.g. the LDS writes of the next tile):
// a block that ends in an unconditional branch into the loop, right after it, belongs to it.
void extendLoops(const std::vector<Line>& lines, Branches* br) {
  for (auto& [head, tail] : br->loops) {
    for (size_t j = tail + 1; j < lines.size() && j <= tail + (tail - head) + 1; ++j) {
      const std::string& m = lines[j].mnemonic;
      const bool uncond = m == "s_branch" || m == "bra" || m == "bra.uni" || m == "BRA";
      const long t = br->target_of[j];
      if (t >= 0 && uncond) {
        if (static_cast<size_t>(t) >= head && static_cast<size_t>(t) <= tail) tail = j;
        break;
      }
      if (m == "s_endpgm" || m == "ret" || m == "EXIT" || t >= 0) break;
    }
  }
}

// The loop counts of the report: innermost loops and their waits, every loop's stats, the K loop.
void countLoops(const std::vector<Op>& ops, const std::vector<std::pair<size_t, size_t>>& loops,
                IsaReport* r) {
  r->loops = static_cast<int>(loops.size());
  // Innermost: loops whose range contains no other loop.
  std::set<size_t> counted;
  for (const auto& a : loops) {
    bool inner = true;
    for (const auto& b : loops)
      if (&a != &b && b.first >= a.first && b.second <= a.second &&
          (b.first != a.first || b.second != a.second))
        inner = false;
    if (!inner) continue;
    ++r->innermost_loops;
    for (size_t i = a.first; i <= a.second && i < ops.size(); ++i)
      if (ops[i].cls == OpClass::kWait && counted.insert(i).second) ++r->waitcnt_in_loop;
  }
  // Every loop's counts (not only the innermost: a backward jump inside the K loop body, e.g.
  // from block placement around an edge path, would otherwise hide the K loop).
  for (const auto& a : loops) {
    bool dup = false;
    for (const auto& l : r->loop_list)
      dup |= l.first_line == static_cast<int>(a.first) && l.last_line == static_cast<int>(a.second);
    if (!dup) r->loop_list.push_back(loopStats(ops, a.first, a.second));
  }
  std::sort(r->loop_list.begin(), r->loop_list.end(),
            [](const LoopStats& x, const LoopStats& y) { return x.first_line < y.first_line; });
  // The K loop: the loop with the most matrix ops (GEMM), else the one with the most global loads
  // (streaming kernels), the smallest such range on ties; epilogue branches have neither.
  for (size_t i = 0; i < r->loop_list.size(); ++i) {
    const LoopStats& c = r->loop_list[i];
    if (c.matrix_total == 0 && c.global_loads.empty()) continue;
    if (r->main_loop < 0) {
      r->main_loop = static_cast<int>(i);
      continue;
    }
    const LoopStats& best = r->loop_list[r->main_loop];
    int cl = 0, bl = 0;
    for (const auto& [w, n] : c.global_loads) cl += n;
    for (const auto& [w, n] : best.global_loads) bl += n;
    if (std::make_tuple(c.matrix_total, cl, -c.instructions) >
        std::make_tuple(best.matrix_total, bl, -best.instructions))
      r->main_loop = static_cast<int>(i);
  }
}

}  // namespace

bool IsaReport::allPass() const {
  for (const auto& v : verdicts)
    if (!v.pass) return false;
  return true;
}

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
  std::map<std::string, size_t> label_at;  // label -> index in `lines`
  const std::vector<Line> lines = parseLines(text, kind, &r, &label_at);
  std::vector<Op> ops;
  Branches br = classifyLines(lines, kind, label_at, &r, &ops);
  extendLoops(lines, &br);
  countLoops(ops, br.loops, &r);
  r.verdicts = isaVerdicts(r);
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
  if (const LoopStats* k = mainLoop()) {
    j["k_loop"] = {{"first", k->first_line},
                   {"last", k->last_line},
                   {"instructions", k->instructions},
                   {"global_loads", widths(k->global_loads)},
                   {"lds_loads", widths(k->lds_loads)},
                   {"lds_stores", widths(k->lds_stores)},
                   {"lds_read2", k->lds_read2},
                   {"lds_write2", k->lds_write2},
                   {"matrix", k->matrix},
                   {"waits", k->waits},
                   {"vm_waits", k->vm_waits},
                   {"lgkm_waits", k->lgkm_waits},
                   {"min_vmcnt", k->min_vmcnt},
                   {"min_lgkmcnt", k->min_lgkmcnt},
                   {"accvgpr_moves", k->accvgpr_moves},
                   {"ldmatrix", k->ldmatrix},
                   {"scratch_ops", k->scratch_ops}};
  }
  nlohmann::json vs = nlohmann::json::array();
  for (const auto& v : verdicts)
    vs.push_back({{"check", v.check}, {"verdict", v.pass ? "PASS" : "WARN"}, {"reason", v.reason}});
  j["verdicts"] = vs;
  return j.dump();
}

std::string widthList(const std::map<int, int>& m) {
  std::string s;
  for (const auto& [w, n] : m)
    s += (s.empty() ? "" : ", ") + std::to_string(n) + "x" + std::to_string(w) + "b";
  return s.empty() ? std::string("none") : s;
}

std::string IsaReport::text() const {
  const auto& widths = widthList;
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
  if (const LoopStats* k = mainLoop()) {
    o << "K loop (instructions " << k->first_line << ".." << k->last_line << "): "
      << k->instructions << " instructions, matrix " << k->matrix_total << ", global loads "
      << widths(k->global_loads) << ", LDS reads " << widths(k->lds_loads) << " ("
      << k->lds_read2 << " paired), writes " << widths(k->lds_stores) << "\n";
    o << "  waits " << k->waits << ": vm " << k->vm_waits << " (min " << k->min_vmcnt << "), lgkm "
      << k->lgkm_waits << " (min " << k->min_lgkmcnt << "); accvgpr moves " << k->accvgpr_moves
      << ", scratch " << k->scratch_ops << "\n";
  }
  for (const auto& v : verdicts)
    o << (v.pass ? "PASS " : "WARN ") << v.check << ": " << v.reason << "\n";
  return o.str();
}

}  // namespace ktune
