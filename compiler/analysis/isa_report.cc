#include "compiler/analysis/isa_report.h"

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
  return w;
}

bool isPaired(const std::string& m) {  // ds_read2*/ds_write2*: two accesses of the base width
  return m.find("read2") != std::string::npos || m.find("write2") != std::string::npos ||
         m.find("load_2addr") != std::string::npos || m.find("store_2addr") != std::string::npos;
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


enum class OpClass { kOther, kGlobalLoad, kGlobalStore, kLdsLoad, kLdsStore, kMatrix, kWait, kScratch };

struct Op {
  Op() = default;
  Op(OpClass c, int w, int n = 1) : cls(c), width(w), count(n) {}
  OpClass cls = OpClass::kOther;
  int width = 0, count = 1;  // count 2 for paired LDS accesses
  std::string matrix;        // matrix kind
  int vmcnt = -1, lgkmcnt = -1;  // wait operands (vm also: cp.async/wgmma wait_group N)
  bool accvgpr = false, ldmatrix = false;
};

int waitOperand(const std::string& l, const char* name) {
  const auto p = l.find(name);
  if (p == std::string::npos) return -1;
  return std::atoi(l.c_str() + p + std::strlen(name));
}

Op classifyAmd(const std::string& m, const std::string& l) {
  Op o;
  // Buffer accesses without a VGPR offset ("off, s[...]") go to the private segment: scratch.
  const bool scratch_buffer = startsWith(m, "buffer_") && l.find(" off, s[") != std::string::npos;
  if (startsWith(m, "global_load") || startsWith(m, "flat_load") ||
      (startsWith(m, "buffer_load") && !scratch_buffer))
    o = {OpClass::kGlobalLoad, amdWidth(m)};
  else if (startsWith(m, "global_store") || startsWith(m, "flat_store") ||
           (startsWith(m, "buffer_store") && !scratch_buffer))
    o = {OpClass::kGlobalStore, amdWidth(m)};
  else if (startsWith(m, "ds_read") || startsWith(m, "ds_load"))
    o = {OpClass::kLdsLoad, amdWidth(m), isPaired(m) ? 2 : 1};
  else if (startsWith(m, "ds_write") || startsWith(m, "ds_store"))
    o = {OpClass::kLdsStore, amdWidth(m), isPaired(m) ? 2 : 1};
  else if (startsWith(m, "v_mfma") || startsWith(m, "v_smfmac") || startsWith(m, "v_wmma")) {
    o.cls = OpClass::kMatrix;
    o.matrix = m;
    for (const char* suf : {"_e64", "_vgprcd"}) {
      auto p = o.matrix.find(suf);
      if (p != std::string::npos) o.matrix = o.matrix.substr(0, p);
    }
  } else if (startsWith(m, "s_waitcnt")) {
    o.cls = OpClass::kWait;
    o.vmcnt = waitOperand(l, "vmcnt(");
    o.lgkmcnt = waitOperand(l, "lgkmcnt(");
    if (m == "s_waitcnt" && o.vmcnt < 0 && o.lgkmcnt < 0 && l.find("cnt(") == std::string::npos) {
      // comgr prints a bare immediate for "wait for everything"
      o.vmcnt = o.lgkmcnt = 0;
    }
  } else if (startsWith(m, "scratch_") || (scratch_buffer && m.find("_wb") == std::string::npos &&
                                            m.find("_inv") == std::string::npos)) {
    o.cls = OpClass::kScratch;  // buffer ops without a VGPR offset: the pre-gfx940 scratch path
  }
  o.accvgpr = startsWith(m, "v_accvgpr_");
  return o;
}

Op classifyPtx(const std::string& m, const std::string& l) {
  Op o;
  if (startsWith(m, "ld.global"))
    o = {OpClass::kGlobalLoad, ptxWidth(m)};
  else if (startsWith(m, "st.global"))
    o = {OpClass::kGlobalStore, ptxWidth(m)};
  else if (startsWith(m, "ld.shared"))
    o = {OpClass::kLdsLoad, ptxWidth(m)};
  else if (startsWith(m, "st.shared"))
    o = {OpClass::kLdsStore, ptxWidth(m)};
  else if (startsWith(m, "cp.async.cg") || startsWith(m, "cp.async.ca") ||
           startsWith(m, "cp.async.bulk.tensor"))
    o = {OpClass::kGlobalLoad, 128};
  else if (startsWith(m, "ld.local") || startsWith(m, "st.local"))
    o.cls = OpClass::kScratch;
  else if (startsWith(m, "ldmatrix")) {
    o = {OpClass::kLdsLoad, 128};
    o.ldmatrix = true;
  } else if (startsWith(m, "stmatrix")) {
    o = {OpClass::kLdsStore, 128};
  } else if (startsWith(m, "mma.sync") || startsWith(m, "wgmma.mma_async")) {
    static const std::regex shape(R"(^(.*?\.m\d+n\d+k\d+))");
    std::smatch sm;
    o.cls = OpClass::kMatrix;
    o.matrix = std::regex_search(m, sm, shape) ? std::string(sm[1]) : m;
  } else if (startsWith(m, "cp.async.wait") || startsWith(m, "cp.async.bulk.wait") ||
             startsWith(m, "wgmma.wait_group")) {
    o.cls = OpClass::kWait;
    // wait_all / wait_group 0 wait for everything in flight.
    o.vmcnt = m.find("wait_all") != std::string::npos ? 0 : std::atoi(l.c_str() + m.size());
  }
  return o;
}

Op classifySass(const std::string& m) {
  Op o;
  if (startsWith(m, "LDGSTS") || startsWith(m, "LDG"))
    o = {OpClass::kGlobalLoad, sassWidth(m)};
  else if (startsWith(m, "STG"))
    o = {OpClass::kGlobalStore, sassWidth(m)};
  else if (startsWith(m, "LDSM")) {
    o = {OpClass::kLdsLoad, 128};
    o.ldmatrix = true;
  } else if (startsWith(m, "LDS"))
    o = {OpClass::kLdsLoad, sassWidth(m)};
  else if (startsWith(m, "STS"))
    o = {OpClass::kLdsStore, sassWidth(m)};
  else if (startsWith(m, "LDL") || startsWith(m, "STL"))
    o.cls = OpClass::kScratch;
  else if (startsWith(m, "HMMA") || startsWith(m, "HGMMA") || startsWith(m, "IMMA")) {
    auto second = m.find('.', m.find('.') + 1);
    o.cls = OpClass::kMatrix;
    o.matrix = startsWith(m, "HGMMA") ? std::string("HGMMA") : m.substr(0, second);
  } else if (startsWith(m, "DEPBAR") || startsWith(m, "WARPGROUP.DEPBAR")) {
    o.cls = OpClass::kWait;
  }
  return o;
}

void addOp(const Op& o, std::map<int, int>* gl, std::map<int, int>* gs, std::map<int, int>* ll,
           std::map<int, int>* ls, std::map<std::string, int>* mx) {
  switch (o.cls) {
    case OpClass::kGlobalLoad: (*gl)[o.width] += o.count; break;
    case OpClass::kGlobalStore: (*gs)[o.width] += o.count; break;
    case OpClass::kLdsLoad: (*ll)[o.width] += o.count; break;
    case OpClass::kLdsStore: (*ls)[o.width] += o.count; break;
    case OpClass::kMatrix: ++(*mx)[o.matrix]; break;
    default: break;
  }
}

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
  std::vector<Op> ops(lines.size());
  std::vector<long> target_of(lines.size(), -1);  // branch -> target instruction index
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& m = lines[i].mnemonic;
    const std::string& l = lines[i].text;
    ++r.instructions;
    ++r.mnemonics[m];
    const Op o = kind == IsaKind::kAmdgcn ? classifyAmd(m, l)
                 : kind == IsaKind::kPtx  ? classifyPtx(m, l)
                                          : classifySass(m);
    ops[i] = o;
    addOp(o, &r.global_loads, &r.global_stores, &r.lds_loads, &r.lds_stores, &r.matrix);
    // cp.async and TMA copies move global memory into shared memory without registers: counted as
    // the global load above and as the shared-memory store they also are.
    if (kind == IsaKind::kPtx && (startsWith(m, "cp.async.cg") || startsWith(m, "cp.async.ca") ||
                                  startsWith(m, "cp.async.bulk.tensor")))
      ++r.lds_stores[128];
    if (o.cls == OpClass::kWait) ++r.waitcnt_total;
    if (o.cls == OpClass::kScratch) ++r.scratch_ops;
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
          if (it != line_at_addr.end()) target_of[i] = static_cast<long>(it->second);
          if (it != line_at_addr.end() && it->second <= i) loops.emplace_back(it->second, i);
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
    if (!target.empty()) {
      auto it = label_at.find(target);
      if (it != label_at.end()) target_of[i] = static_cast<long>(it->second);
      if (it != label_at.end() && it->second <= i) loops.emplace_back(it->second, i);
    }
  }
  r.loops = static_cast<int>(loops.size());
  // Block placement often puts part of a loop body after its backward branch, reached by a forward
  // branch and jumping back with an unconditional branch (e.g. the LDS writes of the next tile):
  // a block that ends in an unconditional branch into the loop, right after it, belongs to it.
  for (auto& [head, tail] : loops) {
    for (size_t j = tail + 1; j < lines.size() && j <= tail + (tail - head) + 1; ++j) {
      const std::string& m = lines[j].mnemonic;
      const bool uncond = m == "s_branch" || m == "bra" || m == "bra.uni" || m == "BRA";
      if (target_of[j] >= 0 && uncond) {
        if (static_cast<size_t>(target_of[j]) >= head && static_cast<size_t>(target_of[j]) <= tail)
          tail = j;
        break;
      }
      if (m == "s_endpgm" || m == "ret" || m == "EXIT" || target_of[j] >= 0) break;
    }
  }
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
    for (size_t i = a.first; i <= a.second && i < lines.size(); ++i)
      if (ops[i].cls == OpClass::kWait && counted.insert(i).second) ++r.waitcnt_in_loop;
  }
  // Every loop's counts (not only the innermost: a backward jump inside the K loop body, e.g.
  // from block placement around an edge path, would otherwise hide the K loop).
  for (const auto& a : loops) {
    bool dup = false;
    for (const auto& l : r.loop_list)
      dup |= l.first_line == static_cast<int>(a.first) && l.last_line == static_cast<int>(a.second);
    if (!dup) r.loop_list.push_back(loopStats(ops, a.first, a.second));
  }
  std::sort(r.loop_list.begin(), r.loop_list.end(),
            [](const LoopStats& x, const LoopStats& y) { return x.first_line < y.first_line; });
  // The K loop: the loop with the most matrix ops (GEMM), else the one with the most global loads
  // (streaming kernels), the smallest such range on ties; epilogue branches have neither.
  for (size_t i = 0; i < r.loop_list.size(); ++i) {
    const LoopStats& c = r.loop_list[i];
    if (c.matrix_total == 0 && c.global_loads.empty()) continue;
    if (r.main_loop < 0) {
      r.main_loop = static_cast<int>(i);
      continue;
    }
    const LoopStats& best = r.loop_list[r.main_loop];
    int cl = 0, bl = 0;
    for (const auto& [w, n] : c.global_loads) cl += n;
    for (const auto& [w, n] : best.global_loads) bl += n;
    if (std::make_tuple(c.matrix_total, cl, -c.instructions) >
        std::make_tuple(best.matrix_total, bl, -best.instructions))
      r.main_loop = static_cast<int>(i);
  }
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
