/* multi_gpu: one index spread over every GPU of the machine.
 *
 * A context opened with device_count = QV_ALL_DEVICES holds every visible GPU. Plain descriptors
 * live on its first device; two prefixes spread an index over all of them:
 *   "Sharded,<kind>"     the vectors split among the GPUs (capacity: each holds a share); every query
 *                        searches every shard and the shards' results are merged on the GPUs;
 *   "Replicated,<kind>"  a full copy on each GPU, a batch of queries split among them (throughput).
 * A saved composite loads into a context of any number of devices. Without a GPU the context falls
 * back to the CPU, where "Sharded4,..." gives four logical shards, so this runs anywhere.
 *
 *   build/bin/multi_gpu
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "quiver/quiver.h"

enum { DIM = 32, N = 20000, NQ = 200, K = 10 };

#define CHECK(call)                                                                       \
  do {                                                                                    \
    qv_status_t status_ = (call);                                                         \
    if (status_ != QV_OK) {                                                               \
      fprintf(stderr, "multi_gpu: %s failed: %s: %s\n", #call, qv_status_string(status_), \
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

/* The share of want's ids that got also found, query by query. */
static double overlap(const int64_t *got, const int64_t *want) {
  int64_t hits = 0, q, i, j;
  for (q = 0; q < NQ; ++q)
    for (i = 0; i < K; ++i)
      for (j = 0; j < K; ++j) hits += got[q * K + i] == want[q * K + j];
  return (double)hits / (double)(NQ * K);
}

int main(void) {
  int exit_code = 1;
  qv_context_t *every = NULL, *one = NULL;
  qv_index_t *flat = NULL, *sharded = NULL, *replicated = NULL, *reloaded = NULL;
  void *buffer = NULL;
  size_t buffer_size = 0;
  float *base = malloc(sizeof(float) * N * DIM), *queries = malloc(sizeof(float) * NQ * DIM);
  float *d = malloc(sizeof(float) * NQ * K);
  int64_t *ids = malloc(sizeof(int64_t) * N), *want = malloc(sizeof(int64_t) * NQ * K);
  int64_t *got = malloc(sizeof(int64_t) * NQ * K);
  int32_t gpus = 0;
  qv_context_options_t options;
  qv_search_params_t params;
  qv_index_info_t info;
  int64_t i;

  if (base == NULL || queries == NULL || d == NULL || ids == NULL || want == NULL || got == NULL) {
    fprintf(stderr, "multi_gpu: out of memory\n");
    goto done;
  }
  for (i = 0; i < N * DIM; ++i) base[i] = random_float();
  for (i = 0; i < NQ * DIM; ++i) queries[i] = random_float();
  for (i = 0; i < N; ++i) ids[i] = 5000000 + 3 * i; /* ids stay the caller's whatever the shard */

  CHECK(qv_cuda_device_count(&gpus));
  CHECK(qv_context_options_init(&options));
  options.device_count = QV_ALL_DEVICES; /* device stays QV_DEVICE_AUTO: the CPU if there is no GPU */
  CHECK(qv_context_create(&options, &every));
  printf("a context over %d GPU(s)%s\n", gpus, gpus == 0 ? " (none: the CPU, with logical shards)" : "");

  /* The reference: one exact index on the first device. */
  CHECK(qv_index_create(every, "Flat", DIM, QV_METRIC_L2, &flat));
  CHECK(qv_index_add(flat, N, base, ids));
  CHECK(qv_index_search(flat, NQ, queries, K, NULL, d, want));

  /* Sharded: each device holds a share of the vectors; adds go to the shards with the fewest. */
  CHECK(qv_index_create(every, gpus > 0 ? "Sharded,Flat" : "Sharded4,Flat", DIM, QV_METRIC_L2, &sharded));
  CHECK(qv_index_add(sharded, N, base, ids));
  CHECK(qv_index_search(sharded, NQ, queries, K, NULL, d, got));
  CHECK(qv_index_info_init(&info));
  CHECK(qv_index_info(sharded, &info));
  printf("\"%s\": %lld vectors, %lld bytes of GPU memory in all; same neighbours as \"Flat\": %.4f\n",
         info.descriptor, (long long)info.count, (long long)info.device_bytes, overlap(got, want));
  if (overlap(got, want) < 0.99) {
    fprintf(stderr, "multi_gpu: the sharded index answers differently from the plain one\n");
    goto done;
  }

  /* Replicated: a full copy on each device (trained once); the batch is split among the copies. */
  CHECK(qv_index_create(every, "Replicated,IVF64,Flat", DIM, QV_METRIC_L2, &replicated));
  CHECK(qv_index_train(replicated, N, base));
  CHECK(qv_index_add(replicated, N, base, ids));
  CHECK(qv_search_params_init(&params));
  params.nprobe = 32;
  CHECK(qv_index_search(replicated, NQ, queries, K, &params, d, got));
  printf("\"Replicated,IVF64,Flat\", nprobe 32: recall@10 against \"Flat\" %.4f\n", overlap(got, want));

  /* A saved composite loads into a context of any device count, here the first device alone. */
  CHECK(qv_index_save_buffer(sharded, &buffer, &buffer_size));
  CHECK(qv_context_options_init(&options));
  CHECK(qv_context_create(&options, &one));
  CHECK(qv_index_load_buffer(one, buffer, buffer_size, &reloaded));
  CHECK(qv_index_search(reloaded, NQ, queries, K, NULL, d, got));
  printf("the sharded index saved (%lu bytes) and loaded on one device: same neighbours %.4f\n",
         (unsigned long)buffer_size, overlap(got, want));
  if (overlap(got, want) < 0.99) {
    fprintf(stderr, "multi_gpu: the reloaded index answers differently\n");
    goto done;
  }
  exit_code = 0;

done:
  qv_buffer_free(buffer);
  qv_index_free(reloaded);
  qv_index_free(replicated);
  qv_index_free(sharded);
  qv_index_free(flat);
  qv_context_free(one);
  qv_context_free(every);
  free(got);
  free(want);
  free(ids);
  free(d);
  free(queries);
  free(base);
  return exit_code;
}
