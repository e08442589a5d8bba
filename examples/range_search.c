/* range_search: every vector within a radius of each query, in CSR form.
 *
 * With QV_METRIC_L2 the radius is a squared distance (hits have distance <= radius); with inner
 * product or cosine it is a similarity (hits have similarity >= radius). The result holds, for
 * query i, the entries lims[i] .. lims[i+1]-1 of ids and distances, closest first.
 *
 *   build/bin/range_search
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "quiver/quiver.h"

enum { DIM = 8, N = 5000, NQ = 4 };

#define CHECK(call)                                                                          \
  do {                                                                                       \
    qv_status_t status_ = (call);                                                            \
    if (status_ != QV_OK) {                                                                  \
      fprintf(stderr, "range_search: %s failed: %s: %s\n", #call, qv_status_string(status_), \
              qv_last_error_message());                                                      \
      goto done;                                                                             \
    }                                                                                        \
  } while (0)

static uint64_t rng_state = 0xD1B54A32D192ED03ull;
static float random_float(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)(rng_state >> 40) / (float)(1 << 24); /* [0, 1) */
}

int main(void) {
  int exit_code = 1;
  qv_context_t *context = NULL;
  qv_index_t *index = NULL;
  qv_range_result_t *result = NULL;
  float *base = malloc(sizeof(float) * N * DIM);
  float queries[NQ * DIM];
  const float radius = 0.3f; /* squared L2 distance */
  qv_context_options_t options;
  int64_t nq = 0, i, q, e;
  const int64_t *lims = NULL, *ids = NULL;
  const float *distances = NULL;

  if (base == NULL) {
    fprintf(stderr, "range_search: out of memory\n");
    return 1;
  }
  for (i = 0; i < N * DIM; ++i) base[i] = random_float();
  for (i = 0; i < NQ * DIM; ++i) queries[i] = random_float();

  CHECK(qv_context_options_init(&options));
  options.device = QV_DEVICE_CPU;
  options.cpu_threads = 2;
  CHECK(qv_context_create(&options, &context));
  CHECK(qv_index_create(context, "Flat", DIM, QV_METRIC_L2, &index));
  CHECK(qv_index_add(index, N, base, NULL));

  /* The result is allocated by the library and owned by us: qv_range_result_free releases it. */
  CHECK(qv_index_range_search(index, NQ, queries, radius, NULL, &result));
  CHECK(qv_range_result_get(result, &nq, &lims, &ids, &distances));

  printf("%lld hits within squared distance %.2f of %lld queries\n", (long long)lims[nq], radius,
         (long long)nq);
  for (q = 0; q < nq; ++q) {
    printf("query %d: %lld hits", (int)q, (long long)(lims[q + 1] - lims[q]));
    /* Show the three closest; check every hit is within the radius and comes closest first. */
    for (e = lims[q]; e < lims[q + 1]; ++e) {
      if (e < lims[q] + 3) printf("  %lld (%.4f)", (long long)ids[e], distances[e]);
      if (distances[e] > radius || (e > lims[q] && distances[e] < distances[e - 1])) {
        fprintf(stderr, "\nrange_search: hit %lld of query %d is out of radius or order\n",
                (long long)(e - lims[q]), (int)q);
        goto done;
      }
    }
    printf("\n");
  }
  exit_code = 0;

done:
  qv_range_result_free(result);
  qv_index_free(index);
  qv_context_free(context);
  free(base);
  return exit_code;
}
