/* quickstart: the whole life of a quiver index in one small C program.
 *
 * Creates a context (the CPU here, so it runs anywhere), builds an exact "Flat" index of random
 * vectors, searches it, prints the nearest neighbours of a few queries and frees everything.
 * Every call's status is checked; on failure the program prints the library's message and exits 1.
 *
 *   build/bin/quickstart
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "quiver/quiver.h"

enum { DIM = 32, N = 2000, NQ = 3, K = 5 };

/* Prints what failed and why, and jumps to the cleanup code. */
#define CHECK(call)                                                                        \
  do {                                                                                     \
    qv_status_t status_ = (call);                                                          \
    if (status_ != QV_OK) {                                                                \
      fprintf(stderr, "quickstart: %s failed: %s: %s\n", #call, qv_status_string(status_), \
              qv_last_error_message());                                                    \
      goto done;                                                                           \
    }                                                                                      \
  } while (0)

/* A small deterministic generator, so every run prints the same numbers. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float random_float(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)(rng_state >> 40) / (float)(1 << 24) * 2.0f - 1.0f; /* [-1, 1) */
}

int main(void) {
  int exit_code = 1;
  qv_context_t *context = NULL;
  qv_index_t *index = NULL;
  float *base = malloc(sizeof(float) * N * DIM);
  float queries[NQ * DIM];
  float distances[NQ * K];
  int64_t ids[NQ * K];
  qv_context_options_t options;
  int64_t i, q, j;

  if (base == NULL) {
    fprintf(stderr, "quickstart: out of memory\n");
    return 1;
  }
  for (i = 0; i < N * DIM; ++i) base[i] = random_float();
  /* The first query is base vector 42 itself, so its nearest neighbour must be id 42. */
  for (j = 0; j < DIM; ++j) queries[j] = base[42 * DIM + j];
  for (i = DIM; i < NQ * DIM; ++i) queries[i] = random_float();

  /* 1. A context: where the work runs. QV_DEVICE_AUTO would pick a GPU when there is one. */
  CHECK(qv_context_options_init(&options));
  options.device = QV_DEVICE_CPU;
  options.cpu_threads = 2;
  CHECK(qv_context_create(&options, &context));

  /* 2. An exact index for squared L2 distances, and its vectors (ids 0 .. N-1). */
  CHECK(qv_index_create(context, "Flat", DIM, QV_METRIC_L2, &index));
  CHECK(qv_index_add(index, N, base, NULL));

  /* 3. The K nearest neighbours of each query, closest first (NULL params: defaults). */
  CHECK(qv_index_search(index, NQ, queries, K, NULL, distances, ids));

  for (q = 0; q < NQ; ++q) {
    printf("query %d:", (int)q);
    for (j = 0; j < K; ++j)
      printf("  %lld (%.3f)", (long long)ids[q * K + j], distances[q * K + j]);
    printf("\n");
  }
  if (ids[0] != 42) {
    fprintf(stderr, "quickstart: expected base vector 42 to be its own nearest neighbour\n");
    goto done;
  }
  exit_code = 0;

done:
  /* 4. Free the index before its context. Both accept NULL. */
  qv_index_free(index);
  qv_context_free(context);
  free(base);
  return exit_code;
}
