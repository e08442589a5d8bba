/* graph_index: a graph index ("Graph32") for high-recall approximate search.
 *
 * Builds a navigable graph of out-degree 32 over clustered vectors (the first add builds it, and
 * reports its progress through qv_index_set_progress), shows
 * how search_width (the walk's candidate pool) trades speed for recall against exact search, then
 * grows the index with a smaller add (inserted with local repair), removes vectors (tombstones,
 * never returned) and checks that a saved copy answers the same. Runs on the CPU; on a CUDA context
 * the same calls search a copy of the graph on the GPU.
 *
 *   build/bin/graph_index
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/quiver.h"

/* 20 000 vectors: from 16 384 on, walks start from the index's entry layer. */
enum { DIM = 32, N = 20000, ADDED = 2000, NQ = 200, K = 10, CENTRES = 50 };

#define CHECK(call)                                                                         \
  do {                                                                                      \
    qv_status_t status_ = (call);                                                           \
    if (status_ != QV_OK) {                                                                 \
      fprintf(stderr, "graph_index: %s failed: %s: %s\n", #call, qv_status_string(status_), \
              qv_last_error_message());                                                     \
      goto done;                                                                            \
    }                                                                                       \
  } while (0)

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static float random_float(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)(rng_state >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

/* n vectors near CENTRES random centres. */
static void clustered(float *x, int64_t n, const float *centres) {
  int64_t i, d;
  for (i = 0; i < n; ++i) {
    const float *c = centres + (int64_t)(rng_state % CENTRES) * DIM;
    random_float();
    for (d = 0; d < DIM; ++d) x[i * DIM + d] = c[d] + random_float();
  }
}

/* The build's progress (qv_index_set_progress): a line at every quarter. Returning nonzero would
 * cancel the add and leave the index empty. */
static int print_progress(double fraction, void *user_data) {
  int *next_quarter = (int *)user_data;
  while (*next_quarter <= 4 && fraction >= *next_quarter / 4.0) {
    printf("building Graph32: %d%%\n", *next_quarter * 25);
    ++*next_quarter;
  }
  return 0;
}

/* Recall@K of ids against the exact ids. */
static double recall(const int64_t *ids, const int64_t *exact) {
  int64_t q, i, j, hits = 0;
  for (q = 0; q < NQ; ++q)
    for (i = 0; i < K; ++i)
      for (j = 0; j < K; ++j) hits += ids[q * K + i] == exact[q * K + j];
  return (double)hits / (NQ * K);
}

int main(void) {
  int exit_code = 1;
  qv_context_t *context = NULL;
  qv_index_t *flat = NULL, *graph = NULL, *loaded = NULL;
  void *saved = NULL;
  size_t saved_size = 0;
  float *centres = malloc(sizeof(float) * CENTRES * DIM);
  float *base = malloc(sizeof(float) * (N + ADDED) * DIM);
  float *queries = malloc(sizeof(float) * NQ * DIM);
  float *distances = malloc(sizeof(float) * NQ * K);
  int64_t *exact = malloc(sizeof(int64_t) * NQ * K), *ids = malloc(sizeof(int64_t) * NQ * K);
  int64_t *again = malloc(sizeof(int64_t) * NQ * K);
  int64_t gone[100];
  qv_context_options_t options;
  qv_search_params_t params;
  qv_index_info_t info;
  uint32_t width;
  int64_t i, j, removed = 0;
  int next_quarter = 0;

  if (!centres || !base || !queries || !distances || !exact || !ids || !again) {
    fprintf(stderr, "graph_index: out of memory\n");
    goto done;
  }
  for (i = 0; i < CENTRES * DIM; ++i) centres[i] = 10.0f * random_float();
  clustered(base, N + ADDED, centres);
  clustered(queries, NQ, centres);

  CHECK(qv_context_options_init(&options));
  options.device = QV_DEVICE_CPU;
  options.cpu_threads = 2;
  CHECK(qv_context_create(&options, &context));

  /* The exact answer over all N + ADDED vectors, to measure recall once the index holds them all. */
  CHECK(qv_index_create(context, "Flat", DIM, QV_METRIC_L2, &flat));
  CHECK(qv_index_add(flat, N + ADDED, base, NULL));
  CHECK(qv_index_search(flat, NQ, queries, K, NULL, distances, exact));

  /* No training: the first add builds the graph (k-NN graph, pruning, reverse edges, reachability). */
  CHECK(qv_index_create(context, "Graph32", DIM, QV_METRIC_L2, &graph));
  CHECK(qv_index_set_progress(graph, print_progress, &next_quarter));
  CHECK(qv_index_add(graph, N, base, NULL));
  CHECK(qv_index_set_progress(graph, NULL, NULL));
  /* A smaller add (under half the index) inserts the new vectors with local repair. */
  CHECK(qv_index_add(graph, ADDED, base + (int64_t)N * DIM, NULL));

  CHECK(qv_search_params_init(&params)); /* search_width 0: the index's default */
  for (width = 10; width <= 80; width *= 2) {
    params.search_width = width;
    CHECK(qv_index_search(graph, NQ, queries, K, &params, distances, ids));
    printf("Graph32 search_width %2u: recall@%d %.3f\n", width, K, recall(ids, exact));
  }
  if (recall(ids, exact) < 0.95) {
    fprintf(stderr, "graph_index: a wide walk should find nearly every neighbour\n");
    goto done;
  }

  /* Remove the best answer of the first queries: tombstones, never returned again. */
  for (i = 0; i < 100; ++i) gone[i] = exact[i * K];
  CHECK(qv_index_remove(graph, 100, gone, &removed));
  CHECK(qv_index_search(graph, NQ, queries, K, &params, distances, ids));
  for (i = 0; i < NQ * K; ++i)
    for (j = 0; j < 100; ++j)
      if (ids[i] == gone[j]) {
        fprintf(stderr, "graph_index: removed id %lld returned\n", (long long)gone[j]);
        goto done;
      }
  printf("removed %lld vectors; none of them is returned\n", (long long)removed);

  /* A saved copy (with its tombstones) gives the same answers. */
  CHECK(qv_index_save_buffer(graph, &saved, &saved_size));
  CHECK(qv_index_load_buffer(context, saved, saved_size, &loaded));
  CHECK(qv_index_search(loaded, NQ, queries, K, &params, distances, again));
  if (memcmp(ids, again, sizeof(int64_t) * NQ * K) != 0) {
    fprintf(stderr, "graph_index: the loaded copy answers differently\n");
    goto done;
  }

  CHECK(qv_index_info_init(&info));
  CHECK(qv_index_info(graph, &info));
  printf("%s: %lld vectors, %lld bytes of host memory (%.0f a vector), saved in %zu bytes\n", info.descriptor,
         (long long)info.count, (long long)info.host_bytes, (double)info.host_bytes / (double)info.count,
         saved_size);
  exit_code = 0;

done:
  qv_buffer_free(saved);
  qv_index_free(loaded);
  qv_index_free(graph);
  qv_index_free(flat);
  qv_context_free(context);
  free(centres);
  free(base);
  free(queries);
  free(distances);
  free(exact);
  free(ids);
  free(again);
  return exit_code;
}
