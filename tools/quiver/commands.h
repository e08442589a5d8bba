// The subcommands; each parses its own options (argv[0] is "quiver", argv[1] the subcommand name)
// and returns the process exit code, throwing UsageError or Failure on errors.
#pragma once

namespace qvtool {

int run_gen(int argc, char **argv);
int run_build(int argc, char **argv);
int run_search(int argc, char **argv);
int run_bench(int argc, char **argv);
int run_knn_graph(int argc, char **argv);

}  // namespace qvtool
