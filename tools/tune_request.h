// `ktune tune`'s parsed request (read by tune_request.cc), shared by the tuning path (cmd_tune.cc)
// and the no-GPU analysis (tune_analyse.cc). Everything is checked here, before any GPU, compiler
// or file is touched.
#pragma once

#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/options.h"
#include "templates/gemm.h"
#include "tools/args.h"

#include "ops/gemm.h"

namespace ktune::cli {

extern const char* const kTuneUsage;

struct GemmCase {
  std::string name;
  gemm::GemmShape shape;
};

struct TuneRequest {
  ParsedArgs args;
  bool json = false, quiet = false;
  double budget_s = 0;  // --budget (seconds)
  std::string op;         // rmsnorm, silu_mul, gemm; "" with --from-file
  std::string from_file;  // validated: a regular file of JSON lines with family and key
  DType dtype = DType::kBF16;
  long long rows = 0, cols = 0;
  std::vector<GemmCase> gemm_cases;
  std::vector<gemm::KernelKind> kinds;  // --kinds; empty = every kind of the arch
  long long m_lo = 0, m_hi = 0;  // --m LO..HI (range pre-tuning, tools/cmd_predict.cc); 0 = none
};

// Parses and validates argv into *t. Returns -1 to go on, else the exit code to return (usage
// errors print the usage; --help prints it and returns 0).
int parseTuneRequest(const std::vector<std::string>& argv, TuneRequest* t);

// Usage error when --kinds names no kernel that exists for `arch` (it would tune nothing).
int checkKindsForArch(const TuneRequest& t, const std::string& arch);

// Whether a key the database holds is measured again: --retune, or an option that shapes the
// search (--kinds, --full-space, --search, --budget; `tuner_opts.search_explicit`: KTUNE_SEARCH,
// KTUNE_BUDGET). Otherwise a plain run reports it from the database.
bool measuresAgain(const Options& tuner_opts, const TuneRequest& t);
// The GEMM op's options for `ktune tune gemm` under the tuner's options (the tuning run's op and
// the early wave's, tune_early_wave.h).
GemmOp::OpOptions tuneOpOptions(const Options& tuner_opts, const TuneRequest& t);

// The no-GPU path: compile (through the code-object store) and analyse the request's configs for
// --arch (default sm_90a), and say why timing needs a GPU.
// Range pre-tuning (`ktune tune gemm --m LO..HI`): the M values tuned for [lo, hi] (at most
// `max_n`: ends, powers of two, 1.5x midpoints; predict::rangePoints), and the report, after they
// were tuned, of what every other M in the range runs and its predicted regret. Returns an exit code.
std::vector<long long> rangeMs(long long lo, long long hi);
int reportRange(GemmOp& op, const TuneRequest& t);

int analyseWithoutGpu(const TuneRequest& t, const Options& opts, const std::string& why_no_gpu);

}  // namespace ktune::cli
