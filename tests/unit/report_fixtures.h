// Databases for the report tests (report_*_test.cc): a synthetic LLM-suite database (8 GEMM keys
// of ~80 candidates, JIT configs plus cuBLASLt-style algorithms with the vendor default #0, some
// failures, fake code objects in a store for all but the last key), a database full of hostile
// strings, and a small checker of the report's HTML structure. Timings here are made up by a
// deterministic formula; nothing in these files was measured.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "base/config.h"
#include "base/fs.h"
#include "base/sha256.h"
#include "compiler/store/store.h"

namespace ktune::reporttest {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/ktune-report-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { (void)removeTree(path); }
};

inline Validator h100Validator() {
  // ktune, backend, driver, compiler, compiler version, device, arch
  return Validator{"0.1.0", "cuda", "13.0", "nvrtc", "13.0", "NVIDIA H100 80GB HBM3", "sm_90a"};
}

// Deterministic pseudo-random in [0, 1).
inline double unit(uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return double(s >> 11) / double(1ull << 53);
}

// A PTX-looking dump long enough for the ISA analysis (16-byte loads, mma.sync).
inline std::string fakePtx() {
  std::string t = ".version 8.0\n.target sm_90a\n.visible .entry k()\n{\n";
  for (int i = 0; i < 8; ++i)
    t += "  ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];\n"
         "  mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, "
         "{%r5,%r6}, {%f1,%f2,%f3,%f4};\n";
  return t + "  ret;\n}\n";
}

// The LLM suite's keys, as the GEMM op writes them.
inline std::vector<std::string> llmKeys() {
  const int shapes[][3] = {{4096, 6144, 4096}, {4096, 4096, 4096}, {4096, 28672, 4096},
                           {4096, 4096, 14336}, {16, 6144, 4096},  {16, 4096, 4096},
                           {16, 28672, 4096},  {16, 4096, 14336}};
  std::vector<std::string> keys;
  for (const auto& s : shapes)
    keys.push_back("layout=NT,ab=bf16,c=bf16,M=" + std::to_string(s[0]) + ",N=" +
                   std::to_string(s[1]) + ",K=" + std::to_string(s[2]) + ",lda=" +
                   std::to_string(s[2]) + ",ldb=" + std::to_string(s[2]) + ",ldc=" +
                   std::to_string(s[1]) + ",epi=16");
  return keys;
}

// One key's candidates: 72 JIT configs (BLOCK_M x BLOCK_N x BLOCK_K x NUM_STAGES x WARPS), 3 of
// them failing, and `vendor` cuBLASLt-style algorithms. Code-object keys derive from the config,
// so keys share objects as the real tuner's do (the first key writes them into `store`); with no
// store, the keys point at objects that do not exist.
inline DbEntry llmEntry(const std::string& key, int index, int vendor, CodeObjectStore* store) {
  DbEntry e;
  e.key = key;
  e.date = "2026-11-22T10:00:0" + std::to_string(index) + "Z";
  uint64_t seed = 1234 + uint64_t(index) * 77;
  // Plausible medians (ms): prefill at ~700 TFLOP/s, decode at ~3 TB/s of weight reads.
  const double kBaseMs[] = {0.295, 0.196, 0.983, 0.688, 0.0168, 0.0112, 0.0783, 0.0391};
  const double base = kBaseMs[index % 8];
  for (int bm : {64, 128, 256})
    for (int bn : {64, 128, 256})
      for (int bk : {32, 64})
        for (int st : {3, 4})
          for (int wm : {1, 2}) {
            Config cfg{{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"NUM_STAGES", st},
                       {"WARPS_M", wm}, {"WARPS_N", 2}};
            CandidateResult c;
            c.config = cfg.toString();
            c.date = e.date;
            const double shape = 1.0 + 0.15 * std::abs(bm - 128) / 64 +
                                 0.1 * std::abs(bn - 128) / 64 + 0.05 * (bk == 32) +
                                 0.04 * (st == 3) + 0.06 * (wm == 1);
            const double med = base * shape * (1 + 0.05 * unit(seed));
            c.stats = {med, med * 0.985, med * 1.02, med * 0.97, med * 1.1, med, med * 0.01, 60, {}};
            if (bm == 256 && bn == 256 && st == 4) {
              c.status = Code::kOutOfResources;
              c.reason = "shared 264 KiB > 227 KiB per block";
              c.stats = {};
            } else if (bm == 64 && bn == 256 && bk == 64 && st == 3 && wm == 2) {
              c.status = Code::kCompileError;
              c.reason = "nvrtc: error: too many resources requested for launch\n" +
                         std::string(300, '.');
              c.stats = {};
            }
            if (c.status != Code::kCompileError) {
              c.code_object_key = sha256Hex(store ? c.config : c.config + "|absent");
              if (store && index == 0) {
                CodeObject co;
                co.binary = "cubin " + c.config;
                co.format = "cubin";
                co.arch = "sm_90a";
                co.entry = "ktune_gemm";
                co.compiler = "nvrtc";
                co.compiler_version = "13.0";
                co.resources.registers = 40 + bm / 4 + bn / 8 + 8 * st;
                co.resources.shared_bytes = int64_t(bm + bn) * bk * 2 * st;
                co.resources.max_threads_per_block = 64 * wm * 2;
                co.dumps["ptx"] = fakePtx();
                EXPECT_TRUE(store->put(c.code_object_key, co).ok());
              }
            }
            e.candidates.push_back(std::move(c));
          }
  for (int i = 0; i < vendor; ++i) {
    CandidateResult c;
    c.source = "cublaslt";
    c.config = "cublaslt:idx=" + std::to_string(i) + ":algo=" + std::to_string(1000 + 37 * i);
    const double med = base * (i == 0 ? 1.12 : 1.03 + 0.06 * i) * (1 + 0.02 * unit(seed));
    c.stats = {med, med * 0.99, med * 1.015, med * 0.98, med * 1.05, med, med * 0.005, 80, {}};
    c.date = e.date;
    e.candidates.push_back(std::move(c));
  }
  const CandidateResult* best = nullptr;
  for (const auto& c : e.candidates)
    if (c.status == Code::kOk && (!best || c.stats.median_ms < best->stats.median_ms)) best = &c;
  e.winner = best->config;
  e.winner_source = best->source;
  e.winner_stats = best->stats;
  return e;
}

// Writes the synthetic LLM suite to `db_path`; code objects into `store_dir` (when not empty) for
// every key but the last, so the report shows both cases.
inline void writeLlmSuite(const std::string& db_path, const std::string& store_dir) {
  std::shared_ptr<CodeObjectStore> store;
  if (!store_dir.empty()) store = CodeObjectStore::open(store_dir).value();
  auto db = TuningDatabase::open(db_path, h100Validator(), "gemm").value();
  const auto keys = llmKeys();
  for (size_t i = 0; i < keys.size(); ++i) {
    const bool last = i + 1 == keys.size();
    ASSERT_TRUE(db->record(llmEntry(keys[i], int(i), 8, last ? nullptr : store.get())).ok());
  }
}

// Tags and attributes the report may contain; anything else means a string got out of its
// escaping.
inline const std::set<std::string>& allowedTags() {
  static const std::set<std::string> t = {
      "html", "head", "meta", "title", "style", "body", "main", "header", "h1", "h2", "h3", "h4",
      "p", "section", "div", "table", "colgroup", "col", "tr", "th", "td", "code", "pre", "ul",
      "li", "a", "b", "i", "br", "wbr", "span", "svg", "g", "text", "rect", "path", "line", "circle"};
  return t;
}
inline const std::set<std::string>& allowedAttributes() {
  static const std::set<std::string> a = {
      "lang", "charset", "http-equiv", "content", "name", "class", "id", "href", "style", "colspan",
      "viewbox", "width", "height", "role", "aria-label", "x", "y", "x1", "y1", "x2", "y2", "d",
      "fill", "stroke", "cx", "cy", "r", "text-anchor"};
  return a;
}

struct HtmlCheck {
  std::string error;  // empty when well-formed
  std::set<std::string> ids;
  std::map<std::string, int> tags;  // tag name -> count
  std::string text;                 // concatenated text content (references left as written)
};

// A strict checker of the report's own HTML: one doctype, balanced tags (void elements and SVG's
// self-closing ones excepted), double-quoted attributes without '<', only allowed tags and
// attributes, unique ids, character references well formed, raw text only inside <style>.
inline HtmlCheck checkHtml(const std::string& html) {
  static const std::set<std::string> kVoid = {"meta", "col", "br", "wbr"};
  static const std::set<std::string> kSvg = {"rect", "path", "line", "circle", "text", "g", "title"};
  HtmlCheck r;
  std::vector<std::string> stack;
  auto fail = [&](size_t at, const std::string& why) {
    r.error = why + " at offset " + std::to_string(at) + ": '" + html.substr(at, 80) + "'";
    return r;
  };
  const std::string doctype = "<!DOCTYPE html>";
  if (html.compare(0, doctype.size(), doctype) != 0) return fail(0, "no doctype");
  size_t i = doctype.size();
  while (i < html.size()) {
    const char c = html[i];
    if (c == '&') {
      size_t e = html.find(';', i);
      if (e == std::string::npos || e - i > 10) return fail(i, "bad character reference");
      const std::string ref = html.substr(i + 1, e - i - 1);
      bool ok = ref.size() > 1 && (ref[0] == '#' ? ref.find_first_not_of("0123456789", 1) ==
                                                       std::string::npos
                                                 : ref.find_first_not_of(
                                                       "abcdefghijklmnopqrstuvwxyz") ==
                                                       std::string::npos);
      if (!ok) return fail(i, "bad character reference");
      r.text.append(html, i, e + 1 - i);
      i = e + 1;
      continue;
    }
    if (c != '<') {
      if (c == '>') return fail(i, "raw '>' in text");
      r.text += c;
      ++i;
      continue;
    }
    const size_t end = html.find('>', i);
    if (end == std::string::npos) return fail(i, "unterminated tag");
    std::string tag = html.substr(i + 1, end - i - 1);
    const bool closing = !tag.empty() && tag[0] == '/';
    if (closing) tag.erase(0, 1);
    const bool self_closing = !tag.empty() && tag.back() == '/';
    if (self_closing) tag.pop_back();
    size_t n = 0;
    while (n < tag.size() && (std::isalnum(static_cast<unsigned char>(tag[n])) || tag[n] == '-')) ++n;
    const std::string name = tag.substr(0, n);
    if (name.empty() || !allowedTags().count(name)) return fail(i, "tag '" + name + "' not allowed");
    // Attributes: name="value" pairs.
    size_t p = n;
    while (p < tag.size()) {
      if (tag[p] == ' ') { ++p; continue; }
      size_t eq = tag.find('=', p);
      if (eq == std::string::npos) return fail(i, "attribute without a value");
      std::string attr = tag.substr(p, eq - p);
      for (auto& ch : attr) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      if (!allowedAttributes().count(attr)) return fail(i, "attribute '" + attr + "' not allowed");
      if (eq + 1 >= tag.size() || tag[eq + 1] != '"') return fail(i, "unquoted attribute");
      size_t q = tag.find('"', eq + 2);
      if (q == std::string::npos) return fail(i, "unterminated attribute");
      const std::string value = tag.substr(eq + 2, q - eq - 2);
      if (value.find('<') != std::string::npos) return fail(i, "'<' in an attribute");
      if (attr == "id" && !r.ids.insert(value).second) return fail(i, "duplicate id " + value);
      p = q + 1;
    }
    i = end + 1;
    if (closing) {
      if (stack.empty() || stack.back() != name) return fail(i, "unbalanced </" + name + ">");
      stack.pop_back();
      continue;
    }
    ++r.tags[name];
    if (self_closing) {
      if (!kSvg.count(name) && !kVoid.count(name)) return fail(i, "self-closing <" + name + ">");
      continue;
    }
    if (kVoid.count(name)) continue;
    if (name == "style") {  // raw text up to </style>
      size_t e = html.find("</style>", i);
      if (e == std::string::npos) return fail(i, "unterminated style");
      i = e + 8;
      continue;
    }
    stack.push_back(name);
  }
  if (!stack.empty()) return fail(html.size() - 1, "unclosed <" + stack.back() + ">");
  return r;
}

}  // namespace ktune::reporttest
