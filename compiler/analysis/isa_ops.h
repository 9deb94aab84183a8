// Instruction classification for the ISA report (isa_report.cc): which memory / matrix / wait
// class an AMDGCN, PTX or SASS mnemonic belongs to, and its access width. Internal to
// compiler/analysis.
#pragma once

#include <map>
#include <string>

namespace ktune::isa_detail {

std::string trim(const std::string& s);
bool startsWith(const std::string& s, const char* p);

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

// `m` is the mnemonic, `l` the whole instruction line (operands decide some classes).
Op classifyAmd(const std::string& m, const std::string& l);
Op classifyPtx(const std::string& m, const std::string& l);
Op classifySass(const std::string& m);
// Adds `o` to the per-width / per-kind counters of its class.
void addOp(const Op& o, std::map<int, int>* gl, std::map<int, int>* gs, std::map<int, int>* ll,
           std::map<int, int>* ls, std::map<std::string, int>* mx);

}  // namespace ktune::isa_detail
