/* kmeans: cluster vectors into k groups with qv_kmeans (squared L2), no index needed.
 *
 * The data are points scattered around K well-separated centres; k-means finds K centroids, the
 * nearest centroid of every point and the final objective (the sum of squared distances).
 * Lloyd's algorithm stops in a local minimum that depends on its random start, so the usual
 * practice is shown: a few runs with different seeds, keeping the one with the lowest objective.
 *
 *   build/bin/kmeans
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quiver/quiver.h"

enum { DIM = 4, N = 3000, K = 5 };

#define CHECK(call)                                                                    \
  do {                                                                                 \
    qv_status_t status_ = (call);                                                      \
    if (status_ != QV_OK) {                                                            \
      fprintf(stderr, "kmeans: %s failed: %s: %s\n", #call, qv_status_string(status_), \
              qv_last_error_message());                                                \
      goto done;                                                                       \
    }                                                                                  \
  } while (0)

static uint64_t rng_state = 0xE7037ED1A0B428DBull;
static float random_float(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)(rng_state >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

int main(void) {
  int exit_code = 1;
  qv_context_t *context = NULL;
  float *x = malloc(sizeof(float) * N * DIM);
  int64_t *assignments = malloc(sizeof(int64_t) * N);
  int64_t *best_assignments = malloc(sizeof(int64_t) * N);
  float centres[K * DIM], centroids[K * DIM], best_centroids[K * DIM];
  int64_t sizes[K] = {0};
  double objective = 0.0, best_objective = -1.0;
  uint64_t seed, best_seed = 0;
  qv_context_options_t options;
  qv_kmeans_params_t params;
  int64_t i, c, j;

  if (x == NULL || assignments == NULL || best_assignments == NULL) {
    fprintf(stderr, "kmeans: out of memory\n");
    goto done;
  }
  /* K centres in [-10, 10)^DIM, and points within 0.5 of them in every coordinate. */
  for (i = 0; i < K * DIM; ++i) centres[i] = 10.0f * random_float();
  for (i = 0; i < N; ++i)
    for (j = 0; j < DIM; ++j) x[i * DIM + j] = centres[(i % K) * DIM + j] + 0.5f * random_float();

  CHECK(qv_context_options_init(&options));
  options.device = QV_DEVICE_CPU;
  options.cpu_threads = 2;
  CHECK(qv_context_create(&options, &context));

  CHECK(qv_kmeans_params_init(&params));
  params.iterations = 25;
  for (seed = 1; seed <= 4; ++seed) {
    /* The same seed gives the same clustering, whatever the context's thread count. */
    params.seed = seed;
    CHECK(qv_kmeans(context, DIM, N, x, K, &params, centroids, assignments, &objective));
    printf("seed %d: objective %.3f\n", (int)seed, objective);
    if (!(objective >= 0.0) || !isfinite(objective)) {
      fprintf(stderr, "kmeans: bad objective\n");
      goto done;
    }
    if (best_objective < 0.0 || objective < best_objective) {
      best_objective = objective;
      best_seed = seed;
      memcpy(best_centroids, centroids, sizeof centroids);
      memcpy(best_assignments, assignments, sizeof(int64_t) * N);
    }
  }

  for (i = 0; i < N; ++i) {
    if (best_assignments[i] < 0 || best_assignments[i] >= K) {
      fprintf(stderr, "kmeans: point %lld has assignment %lld\n", (long long)i,
              (long long)best_assignments[i]);
      goto done;
    }
    sizes[best_assignments[i]]++;
  }
  printf("best: seed %d, objective %.3f (sum of squared distances)\n", (int)best_seed,
         best_objective);
  for (c = 0; c < K; ++c) {
    printf("centroid %d (%lld points):", (int)c, (long long)sizes[c]);
    for (j = 0; j < DIM; ++j) printf(" %7.3f", best_centroids[c * DIM + j]);
    printf("\n");
  }
  exit_code = 0;

done:
  qv_context_free(context);
  free(best_assignments);
  free(assignments);
  free(x);
  return exit_code;
}
