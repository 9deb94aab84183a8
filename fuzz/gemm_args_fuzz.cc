// Fuzzes gemmShapeFromJson (ops/gemm.h): the GEMM shape read back from an untuned-keys
// line (hand-editable) or an isolation batch. Properties: no crash, exception or UB on any input;
// an error is kInvalidArgument with a message; an accepted shape validates, and
// gemmCallToJson -> gemmShapeFromJson gives the same shape and the same text (a fixed point).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ops/gemm.h"

namespace {

[[noreturn]] void die(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "gemm_args_fuzz: %s\n  input: '%.*s'\n  detail: %s\n", what,
               int(input.size()), input.data(), detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto s = ktune::gemmShapeFromJson(text);
  if (!s.ok()) {
    if (s.status().code() != ktune::Code::kInvalidArgument || s.status().message().empty())
      die("parse error without kInvalidArgument + message", text, s.status().toString());
    return 0;
  }
  if (!ktune::gemm::validate(*s).ok()) die("accepted a shape validate() rejects", text, "");
  const std::string j = ktune::gemmCallToJson(ktune::GemmCall{*s, {}});
  auto again = ktune::gemmShapeFromJson(j);
  if (!again.ok())
    die("gemmCallToJson does not re-parse", text, j + " -> " + again.status().toString());
  if (ktune::gemm::shapeKey(*again) != ktune::gemm::shapeKey(*s) || again->alpha != s->alpha ||
      again->aligned16 != s->aligned16)
    die("round trip changed the shape", text, j);
  if (ktune::gemmCallToJson(ktune::GemmCall{*again, {}}) != j)
    die("JSON is not a fixed point", text, j);
  return 0;
}
