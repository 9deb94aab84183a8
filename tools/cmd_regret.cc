// `ktune regret`: the guided search against the exhaustive one, shape by shape (tools/regret.h).
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/fs.h"
#include "runtime/backend.h"
#include "tools/commands.h"
#include "tools/regret.h"
#include "tools/sim_gpu.h"

namespace ktune::cli {

const char* const kRegretUsage =
    "ktune regret [--set ci|gpu] [--ops gemm,rmsnorm,silu_mul] [--limit N] [--rounds R]\n"
    "             [--cache DIR (empty or absent; default a fresh temporary directory)] [--cold]\n"
    "             [--deadline SECONDS (no shape starts after it)] [--skip N] [--exhaustive-budget F]\n"
    "             [--only TEXT] [--json]\n"
    "  Tunes every shape of the set twice in this process, exhaustively then with the guided\n"
    "  search (each with its own database; one code-object store, so the guided side tunes with a\n"
    "  warm store; --cold: each side its own cold store), and prints per key the guided winner's\n"
    "  time over the exhaustive winner's (interleaved re-timing of the two) and each side's tuning\n"
    "  time. --limit N: N shapes spread evenly over the set (each category keeps a share).\n"
    "  With --deadline the shapes run in an order whose every prefix is spread over the set;\n"
    "  --skip N leaves out that order's first N (the rest of a run its deadline cut).\n"
    "  --only TEXT: only the shapes whose name contains TEXT (\"x4096x4096 NT\"; A|B: either).\n"
    "  --exhaustive-budget F: the exhaustive side's warm-up and measurement budgets times F (the\n"
    "  re-timing of the two winners keeps the full ones), for a large set in a short run.\n"
    "  KTUNE_BACKEND=sim runs it on the simulated device (deterministic costs; --set ci).";

namespace {

bool wanted(const std::string& ops, const std::string& op) {
  return ops.empty() || ("," + ops + ",").find("," + op + ",") != std::string::npos;
}

// Whether `name` contains one of the '|'-separated texts of `only` (empty: every name).
bool namedBy(const std::string& only, const std::string& name) {
  size_t from = 0;
  for (size_t bar; (bar = only.find('|', from)) != std::string::npos; from = bar + 1)
    if (name.find(only.substr(from, bar - from)) != std::string::npos) return true;
  return name.find(only.substr(from)) != std::string::npos;
}

void printHeader() {
  std::printf("%-34s %-9s %8s %8s %6s %6s %8s  %s\n", "shape", "ratio", "exh s", "guided s",
              "exh c", "gd c", "est", "winners (exhaustive | guided)");
}

void printRow(const RegretRow& r) {
  {
    if (!r.error.empty()) {
      std::printf("%-34s error: %s\n", r.name.c_str(), r.error.c_str());
      return;
    }
    std::printf("%-34s %-9.4f %8.2f %8.2f %6d %6d %7.2f%%  %s%s\n", r.name.c_str(), r.ratio,
                r.exhaustive_s, r.guided_s, r.exhaustive_compiled, r.guided_compiled,
                100 * r.regret_estimate,
                r.exhaustive_winner == r.guided_winner ? "same: " : "",
                r.exhaustive_winner == r.guided_winner
                    ? r.guided_winner.substr(0, 60).c_str()
                    : (r.exhaustive_winner.substr(0, 40) + " | " + r.guided_winner.substr(0, 40)).c_str());
    // Different winners: the re-timing's interval, each side's finalist decision and winner.
    if (r.exhaustive_winner != r.guided_winner) {
      std::printf("%-34s   re-timed %.4f [%.4f, %.4f] over %d rounds; finalists: exhaustive %s | "
                  "guided %s\n", "", r.ratio, r.ratio_lo, r.ratio_hi, r.retime_rounds,
                  r.exhaustive_why.c_str(), r.guided_why.c_str());
      std::printf("%-34s   exhaustive %s\n%-34s   guided     %s\n", "", r.exhaustive_winner.c_str(),
                  "", r.guided_winner.c_str());
      std::printf("%-34s   the exhaustive winner in the guided run: %s\n", "",
                  r.exhaustive_winner_in_guided.c_str());
    }
  }
  std::fflush(stdout);
}

void printSummary(const std::vector<RegretRow>& rows) {
  const RegretSummary s = summarize(rows);
  std::printf("\nkeys %d: within 1%% %d (%.1f%%), geomean ratio %.4f, worst %.4f; tuning time "
              "exhaustive %.1f s, guided %.1f s (%.2fx); configs compiled %d vs %d\n",
              s.keys, s.within_1pct, s.keys ? 100.0 * s.within_1pct / s.keys : 0.0, s.geomean,
              s.worst, s.exhaustive_s, s.guided_s, s.guided_s > 0 ? s.exhaustive_s / s.guided_s : 0.0,
              s.exhaustive_compiled, s.guided_compiled);
}

nlohmann::json rowsJson(const std::vector<RegretRow>& rows) {
  nlohmann::json a = nlohmann::json::array();
  for (const RegretRow& r : rows)
    a.push_back({{"name", r.name}, {"family", r.family}, {"key", r.key},
                 {"exhaustive_winner", r.exhaustive_winner}, {"guided_winner", r.guided_winner},
                 {"ratio", r.ratio}, {"ratio_lo", r.ratio_lo}, {"ratio_hi", r.ratio_hi},
                 {"retime_rounds", r.retime_rounds},
                 {"exhaustive_s", r.exhaustive_s}, {"guided_s", r.guided_s},
                 {"candidates", r.candidates}, {"exhaustive_compiled", r.exhaustive_compiled},
                 {"guided_compiled", r.guided_compiled}, {"guided_reached", r.guided_reached},
                 {"regret_estimate", r.regret_estimate}, {"exhaustive_why", r.exhaustive_why},
                 {"guided_why", r.guided_why},
                 {"exhaustive_winner_in_guided", r.exhaustive_winner_in_guided}, {"error", r.error}});
  const RegretSummary s = summarize(rows);
  return {{"rows", a},
          {"summary", {{"keys", s.keys}, {"within_1pct", s.within_1pct}, {"geomean", s.geomean},
                       {"worst", s.worst}, {"exhaustive_s", s.exhaustive_s},
                       {"guided_s", s.guided_s}, {"exhaustive_compiled", s.exhaustive_compiled},
                       {"guided_compiled", s.guided_compiled}}}};
}

}  // namespace

int cmdRegret(const std::vector<std::string>& argv) {
  auto args = parseArgs(argv, {{"--set", true}, {"--ops", true}, {"--limit", true},
                               {"--rounds", true}, {"--cache", true}, {"--cold"}, {"--deadline", true},
                               {"--exhaustive-budget", true}, {"--json"},
                               {"--skip", true}, {"--only", true}});
  if (!args.ok()) return usage(args.status().message(), kRegretUsage);
  if (args->help) return help(kRegretUsage);
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());
  auto set = regretSet(args->get("--set", opts->backend == "sim" ? "ci" : "gpu"));
  if (!set.ok()) return usage(set.status().message(), kRegretUsage);
  std::vector<RegretShape> shapes;
  const std::string ops = args->get("--ops", "");
  const long limit = std::atol(args->get("--limit", "0").c_str());
  const std::string only = args->get("--only", "");
  for (const auto& s : *set)
    if (wanted(ops, s.op) && namedBy(only, s.name)) shapes.push_back(s);
  shapes = spread(shapes, limit > 0 ? size_t(limit) : 0);
  RegretOptions ro;
  ro.shared_store = !args->has("--cold");
  ro.deadline_s = std::atof(args->get("--deadline", "0").c_str());
  ro.exhaustive_budget = std::atof(args->get("--exhaustive-budget", "1").c_str());
  if (!(ro.exhaustive_budget > 0 && ro.exhaustive_budget <= 1))
    return usage("--exhaustive-budget must be in (0, 1]", kRegretUsage);
  // A run that may be cut by its deadline takes the shapes in an order whose every prefix covers
  // the set's categories (prefill, decode, odd, layouts; row counts).
  if (ro.deadline_s > 0) shapes = spreadOrder(shapes);
  // --skip N: the shapes after the first N of that order, so a run cut by its deadline can be
  // continued in another process (the order depends only on the set).
  auto skip = parseIntFlag("--skip", args->get("--skip", "0"), 0, 1 << 30);
  if (!skip.ok()) return usage(skip.status().message(), kRegretUsage);
  shapes.erase(shapes.begin(), shapes.begin() + std::min(size_t(*skip), shapes.size()));
  ro.rounds = std::max(2, std::atoi(args->get("--rounds", "6").c_str()));
  std::shared_ptr<Backend> backend;
  if (opts->backend == "sim") {
    SimGpu g = openSimGpu(1);
    backend = g.backend;
    ro.compiler = g.compiler;
    ro.sim = true;
  } else {
    auto b = openBackend(opts->backend);
    if (!b.ok()) return fail(b.status(), "KTUNE_BACKEND=sim runs the harness on the simulated device");
    backend = std::move(*b);
  }
  std::string tmp;
  ro.cache_root = args->get("--cache", "");
  if (ro.cache_root.empty()) {
    char t[] = "/tmp/ktune-regret-XXXXXX";
    if (!::mkdtemp(t)) return fail(Status::IoError("mkdtemp failed"));
    ro.cache_root = tmp = t;
  }
  const bool json = args->has("--json");
  if (!json) {
    printHeader();
    ro.on_row = printRow;
  }
  auto rows = runRegret(backend, *opts, shapes, ro);
  if (!tmp.empty()) (void)removeTree(tmp);
  if (!rows.ok()) return fail(rows.status());
  if (json) std::printf("%s\n", rowsJson(*rows).dump(2).c_str());
  else printSummary(*rows);
  if (!json && ro.exhaustive_budget != 1)
    std::printf("(the exhaustive side's do_bench budgets x %.2f; the re-timing's in full)\n",
                ro.exhaustive_budget);
  return kExitOk;
}

}  // namespace ktune::cli
