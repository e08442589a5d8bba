/* filter: search among an allowed subset of ids only.
 *
 * The filter is a bitset over ids: bit (id % 8) of byte filter[id / 8] set means id may be
 * returned; ids at or beyond filter_bits never are. Here only even ids below 600 are allowed.
 *
 *   build/bin/filter
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/quiver.h"

enum { DIM = 16, N = 1000, NQ = 3, K = 8, ALLOWED_BELOW = 600 };

#define CHECK(call)                                                                    \
  do {                                                                                 \
    qv_status_t status_ = (call);                                                      \
    if (status_ != QV_OK) {                                                            \
      fprintf(stderr, "filter: %s failed: %s: %s\n", #call, qv_status_string(status_), \
              qv_last_error_message());                                                \
      goto done;                                                                       \
    }                                                                                  \
  } while (0)

static uint64_t rng_state = 0xA0761D6478BD642Full;
static float random_float(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)(rng_state >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

int main(void) {
  int exit_code = 1;
  qv_context_t *context = NULL;
  qv_index_t *index = NULL;
  float *base = malloc(sizeof(float) * N * DIM);
  float queries[NQ * DIM], distances[NQ * K];
  int64_t ids[NQ * K];
  uint8_t allowed[(ALLOWED_BELOW + 7) / 8];
  qv_context_options_t options;
  qv_search_params_t params;
  int64_t i, q, j;

  if (base == NULL) {
    fprintf(stderr, "filter: out of memory\n");
    return 1;
  }
  for (i = 0; i < N * DIM; ++i) base[i] = random_float();
  for (i = 0; i < NQ * DIM; ++i) queries[i] = random_float();

  /* The bitset: even ids below ALLOWED_BELOW. */
  memset(allowed, 0, sizeof allowed);
  for (i = 0; i < ALLOWED_BELOW; i += 2) allowed[i / 8] |= (uint8_t)(1u << (i % 8));

  CHECK(qv_context_options_init(&options));
  options.device = QV_DEVICE_CPU;
  options.cpu_threads = 2;
  CHECK(qv_context_create(&options, &context));
  CHECK(qv_index_create(context, "Flat", DIM, QV_METRIC_COSINE, &index));
  CHECK(qv_index_add(index, N, base, NULL));

  /* Search parameters start from their defaults; then set the fields we need. */
  CHECK(qv_search_params_init(&params));
  params.filter = allowed;
  params.filter_bits = ALLOWED_BELOW;
  CHECK(qv_index_search(index, NQ, queries, K, &params, distances, ids));

  for (q = 0; q < NQ; ++q) {
    printf("query %d:", (int)q);
    for (j = 0; j < K; ++j) {
      int64_t id = ids[q * K + j];
      printf("  %lld (%.3f)", (long long)id, distances[q * K + j]);
      if (id < 0 || id >= ALLOWED_BELOW || id % 2 != 0) {
        fprintf(stderr, "\nfilter: id %lld is not allowed by the filter\n", (long long)id);
        goto done;
      }
    }
    printf("\n");
  }
  exit_code = 0;

done:
  qv_index_free(index);
  qv_context_free(context);
  free(base);
  return exit_code;
}
