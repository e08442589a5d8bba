// quiver: the command-line face of the library — make data, build and search indexes, benchmark.
#include <quiver/quiver.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "commands.h"
#include "errors.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

struct Command {
  const char *name;
  int (*run)(int, char **);
  const char *summary;
};

const Command kCommands[] = {
    {"gen", qvtool::run_gen, "generate a synthetic data set with exact ground truth"},
    {"build", qvtool::run_build, "build an index from vectors and save it"},
    {"search", qvtool::run_search, "search a saved index; time it and measure recall"},
    {"bench", qvtool::run_bench, "build + search benchmark following BENCHMARKS.md"},
    {"knn-graph", qvtool::run_knn_graph, "build the k-nearest-neighbour graph of a vector set"},
};

void print_usage(FILE *out) {
  std::fprintf(out, "usage: quiver <command> [options]   (quiver <command> --help for details)\n\n"
                    "commands:\n");
  for (const auto &c : kCommands) std::fprintf(out, "  %-9s %s\n", c.name, c.summary);
  std::fprintf(out, "\nquiver %s\n", qv_version_string());
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return kExitUsage;
  }
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    print_usage(stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("quiver %s\n", qv_version_string());
    return 0;
  }
  try {
    for (const auto &c : kCommands)
      if (cmd == c.name) return c.run(argc, argv);
    std::fprintf(stderr, "quiver: unknown command '%s'\n\n", cmd.c_str());
    print_usage(stderr);
    return kExitUsage;
  } catch (const qvtool::UsageError &e) {
    std::fprintf(stderr, "quiver: error: %s\n", e.what());
    return kExitUsage;
  } catch (const qvtool::Failure &e) {
    std::fprintf(stderr, "quiver: error: %s\n", e.what());
    return kExitFailure;
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "quiver: error: out of memory\n");
    return kExitFailure;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "quiver: error: %s\n", e.what());
    return kExitFailure;
  }
}
