/* knn_graph: the k-nearest-neighbour graph of a vector set with qv_knn_graph.
 *
 * Builds the graph twice: exactly, and with the approximate method (inverted-file candidates
 * refined by NN-descent) with a recall estimate on a sample, showing progress with a callback that
 * could cancel the build by returning nonzero. Prints the estimated recall and the measured
 * agreement of the two graphs (`quiver knn-graph` times the methods).
 *
 *   build/bin/knn_graph
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "quiver/quiver.h"

enum { DIM = 16, N = 20000, K = 10 };

#define CHECK(call)                                                                       \
  do {                                                                                    \
    qv_status_t status_ = (call);                                                         \
    if (status_ != QV_OK) {                                                               \
      fprintf(stderr, "knn_graph: %s failed: %s: %s\n", #call, qv_status_string(status_), \
              qv_last_error_message());                                                   \
      goto done;                                                                          \
    }                                                                                     \
  } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float random_float(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)(rng_state >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

/* Prints a tenth of progress at a time; returning nonzero would cancel the build. */
static int show_progress(double fraction, void *user_data) {
  int *printed = (int *)user_data;
  while (*printed <= (int)(fraction * 10)) printf(" %d%%", 10 * (*printed)++);
  fflush(stdout);
  return 0;
}

int main(void) {
  int exit_code = 1, printed = 0;
  qv_context_t *context = NULL;
  float *x = malloc(sizeof(float) * N * DIM);
  int64_t *exact = malloc(sizeof(int64_t) * N * K);
  int64_t *approximate = malloc(sizeof(int64_t) * N * K);
  qv_context_options_t options;
  qv_knn_graph_params_t params;
  double recall = 0.0;
  int64_t i, j, t, same = 0;

  if (!x || !exact || !approximate) goto done;
  /* Points around 50 centres: a clustered set, as real data usually is. */
  for (i = 0; i < N; ++i)
    for (j = 0; j < DIM; ++j) x[i * DIM + j] = random_float() * 0.3f + (float)((i % 50) * (j + 1) % 7);

  CHECK(qv_context_options_init(&options));
  options.device = QV_DEVICE_CPU;
  CHECK(qv_context_create(&options, &context));

  CHECK(qv_knn_graph_params_init(&params));
  params.method = QV_KNN_GRAPH_EXACT;
  CHECK(qv_knn_graph(context, QV_METRIC_L2, DIM, N, x, K, &params, NULL, exact, NULL));

  params.method = QV_KNN_GRAPH_APPROXIMATE;
  params.target_recall = 0.95;
  params.recall_sample = 1000;
  params.progress = show_progress;
  params.user_data = &printed;
  printf("approximate:");
  CHECK(qv_knn_graph(context, QV_METRIC_L2, DIM, N, x, K, &params, NULL, approximate, &recall));
  printf("\n");

  for (i = 0; i < N; ++i)
    for (j = 0; j < K; ++j)
      for (t = 0; t < K; ++t) same += approximate[i * K + j] == exact[i * K + t];
  printf("%d points, approximate recall@%d: estimated %.4f on 1000 points, measured %.4f\n", N, K, recall,
         (double)same / ((double)N * K));
  exit_code = 0;

done:
  qv_context_free(context);
  free(x);
  free(exact);
  free(approximate);
  return exit_code;
}
