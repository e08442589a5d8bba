/* knn: exact k-nearest-neighbour search between two arrays, without building an index.
 *
 * qv_knn is the one-shot form of a "Flat" index: it compares every query with every base vector.
 * The ids it returns are row numbers of the base array. Here the answers are checked against a
 * plain loop.
 *
 *   build/bin/knn
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "quiver/quiver.h"

enum { DIM = 10, N = 1500, NQ = 4, K = 3 };

#define CHECK(call)                                                                 \
  do {                                                                              \
    qv_status_t status_ = (call);                                                   \
    if (status_ != QV_OK) {                                                         \
      fprintf(stderr, "knn: %s failed: %s: %s\n", #call, qv_status_string(status_), \
              qv_last_error_message());                                             \
      goto done;                                                                    \
    }                                                                               \
  } while (0)

static uint64_t rng_state = 0x8BB84B93962EACC9ull;
static float random_float(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)(rng_state >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

/* The nearest base row of one query by a plain loop (squared L2, in double). */
static int64_t nearest_by_loop(const float *base, const float *query) {
  int64_t best = -1, i, j;
  double best_d = 0.0;
  for (i = 0; i < N; ++i) {
    double d = 0.0;
    for (j = 0; j < DIM; ++j) {
      double diff = (double)base[i * DIM + j] - query[j];
      d += diff * diff;
    }
    if (best < 0 || d < best_d) {
      best = i;
      best_d = d;
    }
  }
  return best;
}

int main(void) {
  int exit_code = 1;
  qv_context_t *context = NULL;
  float *base = malloc(sizeof(float) * N * DIM);
  float queries[NQ * DIM], distances[NQ * K];
  int64_t ids[NQ * K];
  qv_context_options_t options;
  int64_t i, q, j;

  if (base == NULL) {
    fprintf(stderr, "knn: out of memory\n");
    return 1;
  }
  for (i = 0; i < N * DIM; ++i) base[i] = random_float();
  for (i = 0; i < NQ * DIM; ++i) queries[i] = random_float();

  CHECK(qv_context_options_init(&options));
  options.device = QV_DEVICE_CPU;
  options.cpu_threads = 2;
  CHECK(qv_context_create(&options, &context));

  CHECK(qv_knn(context, QV_METRIC_L2, DIM, N, base, NQ, queries, K, NULL, distances, ids));

  for (q = 0; q < NQ; ++q) {
    int64_t expected = nearest_by_loop(base, &queries[q * DIM]);
    printf("query %d:", (int)q);
    for (j = 0; j < K; ++j)
      printf("  row %lld (%.4f)", (long long)ids[q * K + j], distances[q * K + j]);
    printf("\n");
    if (ids[q * K] != expected) {
      fprintf(stderr, "knn: query %d: nearest row %lld, a plain loop says %lld\n", (int)q,
              (long long)ids[q * K], (long long)expected);
      goto done;
    }
  }
  exit_code = 0;

done:
  qv_context_free(context);
  free(base);
  return exit_code;
}
