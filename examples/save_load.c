/* save_load: write an index to a file and to a memory buffer, read both back, and check that the
 * copies answer exactly as the original does.
 *
 * qv_index_save writes to a temporary name beside the path and renames it into place, so the file
 * at the path is always either the old one or the complete new one.
 *
 *   build/bin/save_load            (writes and removes a file in $TMPDIR or /tmp)
 */
#define _POSIX_C_SOURCE 200809L /* getpid */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quiver/quiver.h"

enum { DIM = 24, N = 1000, NQ = 5, K = 10 };

#define CHECK(call)                                                                       \
  do {                                                                                    \
    qv_status_t status_ = (call);                                                         \
    if (status_ != QV_OK) {                                                               \
      fprintf(stderr, "save_load: %s failed: %s: %s\n", #call, qv_status_string(status_), \
              qv_last_error_message());                                                   \
      goto done;                                                                          \
    }                                                                                     \
  } while (0)

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static float random_float(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)(rng_state >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

/* Searches `index` and compares with the original's answers; returns 1 when they are identical. */
static int same_answers(const qv_index_t *index, const float *queries, const float *want_d,
                        const int64_t *want_ids, const char *what) {
  float d[NQ * K];
  int64_t ids[NQ * K];
  qv_status_t status = qv_index_search(index, NQ, queries, K, NULL, d, ids);
  if (status != QV_OK) {
    fprintf(stderr, "save_load: search of the %s copy failed: %s: %s\n", what,
            qv_status_string(status), qv_last_error_message());
    return 0;
  }
  if (memcmp(d, want_d, sizeof d) != 0 || memcmp(ids, want_ids, sizeof ids) != 0) {
    fprintf(stderr, "save_load: the %s copy answers differently\n", what);
    return 0;
  }
  printf("the %s copy answers exactly as the original\n", what);
  return 1;
}

int main(void) {
  int exit_code = 1;
  qv_context_t *context = NULL;
  qv_index_t *index = NULL, *from_file = NULL, *from_buffer = NULL;
  void *buffer = NULL;
  size_t buffer_size = 0;
  float *base = malloc(sizeof(float) * N * DIM);
  int64_t *ids = malloc(sizeof(int64_t) * N);
  float queries[NQ * DIM], want_d[NQ * K];
  int64_t want_ids[NQ * K];
  char path[512];
  const char *tmpdir = getenv("TMPDIR");
  int file_written = 0;
  qv_context_options_t options;
  qv_index_info_t info;
  int64_t i;

  if (base == NULL || ids == NULL) {
    fprintf(stderr, "save_load: out of memory\n");
    goto done;
  }
  for (i = 0; i < N * DIM; ++i) base[i] = random_float();
  for (i = 0; i < NQ * DIM; ++i) queries[i] = random_float();
  for (i = 0; i < N; ++i) ids[i] = 1000000 + 7 * i; /* ids of our own choosing */
  /* A name no other process uses at the same time: the directory plus our process id. */
  snprintf(path, sizeof path, "%s/quiver_save_load_%ld.qv",
           tmpdir != NULL && tmpdir[0] != '\0' ? tmpdir : "/tmp", (long)getpid());

  CHECK(qv_context_options_init(&options));
  options.device = QV_DEVICE_CPU;
  options.cpu_threads = 2;
  CHECK(qv_context_create(&options, &context));
  CHECK(qv_index_create(context, "Flat", DIM, QV_METRIC_INNER_PRODUCT, &index));
  CHECK(qv_index_add(index, N, base, ids));
  CHECK(qv_index_search(index, NQ, queries, K, NULL, want_d, want_ids));

  /* To a file and back. */
  CHECK(qv_index_save(index, path));
  file_written = 1;
  CHECK(qv_index_load(context, path, &from_file));
  printf("saved to and loaded from %s\n", path);
  if (!same_answers(from_file, queries, want_d, want_ids, "file")) goto done;

  /* To a buffer and back: the buffer is ours, released with qv_buffer_free. */
  CHECK(qv_index_save_buffer(index, &buffer, &buffer_size));
  CHECK(qv_index_load_buffer(context, buffer, buffer_size, &from_buffer));
  printf("saved to and loaded from a buffer of %lu bytes\n", (unsigned long)buffer_size);
  if (!same_answers(from_buffer, queries, want_d, want_ids, "buffer")) goto done;

  /* The copy describes itself like the original. */
  CHECK(qv_index_info_init(&info));
  CHECK(qv_index_info(from_buffer, &info));
  printf("copy: \"%s\", dim %lld, %lld vectors\n", info.descriptor, (long long)info.dim,
         (long long)info.count);
  if (info.dim != DIM || info.count != N || info.metric != QV_METRIC_INNER_PRODUCT) {
    fprintf(stderr, "save_load: the copy's info differs from the original's\n");
    goto done;
  }
  exit_code = 0;

done:
  if (file_written && remove(path) != 0) {
    perror("save_load: removing the temporary file");
    exit_code = 1;
  }
  qv_buffer_free(buffer);
  qv_index_free(from_buffer);
  qv_index_free(from_file);
  qv_index_free(index);
  qv_context_free(context);
  free(ids);
  free(base);
  return exit_code;
}
