/* ivf_search: approximate search with inverted-file indexes.
 *
 * Trains an IVF-Flat and an IVF-PQ index with exact re-ranking ("IVF64,PQ8,Refine") on clustered
 * vectors, then shows how nprobe (lists visited) and refine_factor (candidates re-ranked) trade
 * speed for recall against exact search. Runs on the CPU; on a CUDA context the same calls run on
 * the GPU.
 *
 *   build/bin/ivf_search
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "quiver/quiver.h"

enum { DIM = 32, N = 5000, NQ = 100, K = 10, CENTRES = 40 };

#define CHECK(call)                                                                        \
  do {                                                                                     \
    qv_status_t status_ = (call);                                                          \
    if (status_ != QV_OK) {                                                                \
      fprintf(stderr, "ivf_search: %s failed: %s: %s\n", #call, qv_status_string(status_), \
              qv_last_error_message());                                                    \
      goto done;                                                                           \
    }                                                                                      \
  } while (0)

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
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
    for (d = 0; d < DIM; ++d) x[i * DIM + d] = c[d] + 3.0f * random_float();
  }
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
  qv_index_t *flat = NULL, *ivf = NULL, *ivfpq = NULL;
  float *centres = malloc(sizeof(float) * CENTRES * DIM);
  float *base = malloc(sizeof(float) * N * DIM);
  float *queries = malloc(sizeof(float) * NQ * DIM);
  float *distances = malloc(sizeof(float) * NQ * K);
  int64_t *exact = malloc(sizeof(int64_t) * NQ * K), *ids = malloc(sizeof(int64_t) * NQ * K);
  qv_context_options_t options;
  qv_search_params_t params;
  qv_index_info_t info;
  uint32_t nprobe, factor;
  int64_t i;

  if (!centres || !base || !queries || !distances || !exact || !ids) {
    fprintf(stderr, "ivf_search: out of memory\n");
    goto done;
  }
  for (i = 0; i < CENTRES * DIM; ++i) centres[i] = 2.0f * random_float();
  clustered(base, N, centres);
  clustered(queries, NQ, centres);

  CHECK(qv_context_options_init(&options));
  options.device = QV_DEVICE_CPU;
  options.cpu_threads = 2;
  CHECK(qv_context_create(&options, &context));

  /* The exact answer, to measure recall. */
  CHECK(qv_index_create(context, "Flat", DIM, QV_METRIC_L2, &flat));
  CHECK(qv_index_add(flat, N, base, NULL));
  CHECK(qv_index_search(flat, NQ, queries, K, NULL, distances, exact));

  /* IVF-Flat: train (k-means, 64 lists), add, then search with growing nprobe. */
  CHECK(qv_index_create(context, "IVF64,Flat", DIM, QV_METRIC_L2, &ivf));
  CHECK(qv_index_train(ivf, N, base));
  CHECK(qv_index_add(ivf, N, base, NULL));
  CHECK(qv_search_params_init(&params)); /* nprobe = QV_NPROBE_DEFAULT: min(nlist, 8) */
  for (nprobe = 1; nprobe <= 64; nprobe *= 4) {
    params.nprobe = nprobe;
    CHECK(qv_index_search(ivf, NQ, queries, K, &params, distances, ids));
    printf("IVF64,Flat        nprobe %2u: recall@%d %.3f\n", nprobe, K, recall(ids, exact));
  }
  /* nprobe = nlist visits every list: IVF-Flat then returns the exact result. */
  if (recall(ids, exact) < 0.999) {
    fprintf(stderr, "ivf_search: IVF-Flat with every list should be exact\n");
    goto done;
  }

  /* IVF-PQ: 8-byte codes; ",Refine" keeps the raw vectors to re-rank refine_factor x K candidates. */
  CHECK(qv_index_create(context, "IVF64,PQ8,Refine", DIM, QV_METRIC_L2, &ivfpq));
  CHECK(qv_index_train(ivfpq, N, base));
  CHECK(qv_index_add(ivfpq, N, base, NULL));
  params.nprobe = 16;
  for (factor = 1; factor <= 16; factor *= 4) {
    params.refine_factor = factor;
    CHECK(qv_index_search(ivfpq, NQ, queries, K, &params, distances, ids));
    printf("IVF64,PQ8,Refine  nprobe 16, refine_factor %2u: recall@%d %.3f\n", factor, K, recall(ids, exact));
  }

  CHECK(qv_index_info_init(&info));
  CHECK(qv_index_info(ivfpq, &info));
  printf("%s: %lld vectors, %lld bytes of host memory\n", info.descriptor, (long long)info.count,
         (long long)info.host_bytes);
  exit_code = 0;

done:
  qv_index_free(ivfpq);
  qv_index_free(ivf);
  qv_index_free(flat);
  qv_context_free(context);
  free(centres);
  free(base);
  free(queries);
  free(distances);
  free(exact);
  free(ids);
  return exit_code;
}
