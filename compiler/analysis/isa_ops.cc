// Instruction classification for the ISA report (isa_ops.h).
#include "compiler/analysis/isa_ops.h"

#include <cstdlib>
#include <cstring>
#include <regex>

namespace ktune::isa_detail {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

bool startsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

namespace {

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



int waitOperand(const std::string& l, const char* name) {
  const auto p = l.find(name);
  if (p == std::string::npos) return -1;
  return std::atoi(l.c_str() + p + std::strlen(name));
}

}  // namespace

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

}  // namespace ktune::isa_detail
