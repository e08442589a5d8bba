/* Searches a tiny Flat index through an installed quiver; exits 0 when the nearest neighbour of each
 * base vector is itself. */
#include <quiver/quiver.h>

#include <stdio.h>

#define DIM 8
#define N 32

int main(void) {
  float base[N * DIM], distances[N];
  int64_t ids[N];
  qv_context_options_t opts;
  qv_context_t *ctx = NULL;
  qv_index_t *index = NULL;
  qv_status_t s;
  int i, wrong = 0;
  for (i = 0; i < N * DIM; ++i) base[i] = (float)((i * 7919) % 101) / 101.0f + (float)(i / DIM);
  qv_context_options_init(&opts);
  opts.device = QV_DEVICE_CPU;
  s = qv_context_create(&opts, &ctx);
  if (s == QV_OK) s = qv_index_create(ctx, "Flat", DIM, QV_METRIC_L2, &index);
  if (s == QV_OK) s = qv_index_add(index, N, base, NULL);
  if (s == QV_OK) s = qv_index_search(index, N, base, 1, NULL, distances, ids);
  if (s != QV_OK) {
    fprintf(stderr, "%s: %s\n", qv_status_string(s), qv_last_error_message());
  } else {
    for (i = 0; i < N; ++i) wrong += ids[i] != i;
  }
  qv_index_free(index);
  qv_context_free(ctx);
  printf("quiver %s: %s\n", qv_version_string(), s == QV_OK && !wrong ? "OK" : "FAILED");
  return s == QV_OK && !wrong ? 0 : 1;
}
