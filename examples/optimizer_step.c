/*
 * optimizer_step.c: a mixed-precision AdamW step, captured once into a graph and replayed
 * every training step.
 *
 * The step, for a model whose gradients arrive in bf16 (scaled by the loss scale):
 *   hp_grads += float(lp_grads), lp_grads = 0      accel_update_hp_grads
 *   hp_grads *= 1/loss_scale, found_inf if not finite  accel_unscale_and_check
 *   norm = ||hp_grads||_2 over all tensors          accel_multi_tensor_norm
 *   hp_grads *= min(1, max_norm / (norm + eps))     accel_clip_by_global_norm
 *   AdamW on the fp32 master params (skipped when found_inf)   accel_fused_adam
 *   hp_grads = 0
 * Per-step values (1/loss_scale, lr, step, found_inf) live in device memory, so every replay
 * sees new values without a new capture. The same step also runs eagerly on a second copy of
 * the state: graph replay and eager execution must agree bitwise.
 *
 * Build: cc optimizer_step.c $(pkg-config --cflags --libs accel) -o optimizer_step
 * Run:   ./optimizer_step [selector]   (default: $ACCEL_BACKEND, else the best device)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <accel/accel.h>
#include <accel/accel_kernels.h>

#define NTENSORS 3
#define NUMEL (1000 + 333 + 17) /* elements over all tensors */
#define STEPS 6
#define OVERFLOW_STEP 3 /* this step's gradients contain an Inf: the step must be skipped */

static const size_t numel[NTENSORS] = {1000, 333, 17};

/* Device scalars read by the kernels at run time. */
typedef struct step_scalars {
  accel_adam_args_t adam; /* adam.found_inf is the overflow flag */
  float inv_scale;
  float norm;
  float clip_coef;
} step_scalars_t;

/* Everything one copy of the optimizer owns. */
typedef struct optimizer {
  float *fp32;                  /* one allocation: params | hp grads | exp_avg | exp_avg_sq */
  uint16_t *lp;                 /* bf16 gradients, as the backward pass leaves them */
  step_scalars_t *scalars;      /* device */
  step_scalars_t *host_scalars; /* pinned: uploaded at the start of every step */
  step_scalars_t *host_report;  /* pinned: downloaded at the end of every step */
  accel_tensor_t params[NTENSORS], hp[NTENSORS], m[NTENSORS], v[NTENSORS], lp_t[NTENSORS];
} optimizer_t;

typedef struct trainer {
  accel_device_t *dev;
  accel_stream_t *stream;  /* a created stream: the default stream cannot capture */
  accel_graph_t *graph;
  optimizer_t a, b;        /* a: replayed graph, b: the same step run eagerly */
  uint16_t host_lp[NUMEL]; /* gradients from "backward" (plain host memory works for copies) */
  float loss_scale;
  uint32_t adam_step;      /* optimizer steps taken (overflowed steps are not counted) */
} trainer_t;

/* Returns from the calling function when call fails, after printing accel's message. */
#define CHECK(call)                                                                     \
  do {                                                                                  \
    accel_status_t st_ = (call);                                                        \
    if (st_ != ACCEL_OK) {                                                              \
      fprintf(stderr, "line %d: %s: %s: %s\n", __LINE__, #call, accel_status_name(st_), \
              accel_last_error());                                                      \
      return st_;                                                                       \
    }                                                                                   \
  } while (0)

static const float max_norm = 0.1f;

/* float -> bf16, round to nearest even (finite values and infinities). */
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static accel_status_t optimizer_init(accel_device_t *dev, accel_stream_t *s, optimizer_t *o) {
  CHECK(accel_malloc(dev, 4 * NUMEL * sizeof(float), (void **)&o->fp32));
  CHECK(accel_malloc(dev, NUMEL * sizeof(uint16_t), (void **)&o->lp));
  CHECK(accel_malloc(dev, sizeof(step_scalars_t), (void **)&o->scalars));
  CHECK(accel_host_alloc(dev, sizeof(step_scalars_t), (void **)&o->host_scalars));
  CHECK(accel_host_alloc(dev, sizeof(step_scalars_t), (void **)&o->host_report));
  /* Tensors are views into the big allocations: device pointers allow arithmetic. */
  for (size_t i = 0, off = 0; i < NTENSORS; off += numel[i], ++i) {
    o->params[i] = (accel_tensor_t){o->fp32 + off, numel[i], ACCEL_F32};
    o->hp[i] = (accel_tensor_t){o->fp32 + NUMEL + off, numel[i], ACCEL_F32};
    o->m[i] = (accel_tensor_t){o->fp32 + 2 * NUMEL + off, numel[i], ACCEL_F32};
    o->v[i] = (accel_tensor_t){o->fp32 + 3 * NUMEL + off, numel[i], ACCEL_F32};
    o->lp_t[i] = (accel_tensor_t){o->lp + off, numel[i], ACCEL_BF16};
  }
  /* params = 0.5, moments and gradients = 0; stream ordered, no host sync needed */
  CHECK(accel_memset_async(s, o->fp32, 0, 4 * NUMEL * sizeof(float)));
  CHECK(accel_fill(s, o->params, NTENSORS, 0.5f));
  return ACCEL_OK;
}

static void optimizer_free(accel_device_t *dev, optimizer_t *o) {
  accel_free(dev, o->fp32); /* NULL (never allocated) is a no-op */
  accel_free(dev, o->lp);
  accel_free(dev, o->scalars);
  accel_host_free(dev, o->host_scalars);
  accel_host_free(dev, o->host_report);
}

/* The whole optimizer step, submitted to s: recorded when s is capturing, run otherwise. */
static accel_status_t enqueue_step(accel_stream_t *s, optimizer_t *o) {
  step_scalars_t *d = o->scalars;
  /* A captured copy reads its host memory at every replay: it must outlive the graph. */
  CHECK(accel_memcpy_async(s, d, o->host_scalars, sizeof *d));
  CHECK(accel_update_hp_grads(s, o->lp_t, o->hp, NTENSORS, 1));
  CHECK(accel_unscale_and_check(s, o->hp, NTENSORS, &d->inv_scale, &d->adam.found_inf));
  CHECK(accel_multi_tensor_norm(s, o->hp, NTENSORS, 2.0f, &d->norm));
  CHECK(accel_clip_by_global_norm(s, o->hp, NTENSORS, max_norm, &d->norm, 1e-6f,
                                  &d->clip_coef));
  CHECK(accel_fused_adam(s, o->params, o->hp, o->m, o->v, NTENSORS, &d->adam));
  CHECK(accel_memset_async(s, o->hp[0].data, 0, NUMEL * sizeof(float)));
  CHECK(accel_memcpy_async(s, o->host_report, d, sizeof *d));
  return ACCEL_OK;
}

/* Captures the step of copy a once. */
static accel_status_t capture(trainer_t *t) {
  CHECK(accel_graph_create(t->dev, &t->graph));
  CHECK(accel_graph_capture_begin(t->graph, t->stream, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  accel_status_t st = enqueue_step(t->stream, &t->a);
  /* Always end a capture that began; an error inside it also makes capture_end fail. */
  accel_status_t end = accel_graph_capture_end(t->graph);
  if (st == ACCEL_OK) CHECK(end);
  return st;
}

static accel_status_t train_step(trainer_t *t, int step) {
  /* "backward": scaled bf16 gradients; an Inf in one step to exercise overflow skipping */
  for (size_t j = 0; j < NUMEL; ++j) {
    int r = (int)((j * 7919u + (size_t)step * 104729u) % 2001u) - 1000;
    t->host_lp[j] = to_bf16(1e-5f * (float)r * t->loss_scale);
  }
  if (step == OVERFLOW_STEP) t->host_lp[NUMEL / 2] = to_bf16(1.0f / 0.0f);
  /* Per-step device scalars. The previous step was synchronized: nothing reads them now. */
  accel_adam_args_t args = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                            .weight_decay = 0.01f, .step = t->adam_step + 1, .adamw = 1,
                            .found_inf = 0.0f};
  t->a.host_scalars->adam = t->b.host_scalars->adam = args;
  t->a.host_scalars->inv_scale = t->b.host_scalars->inv_scale = 1.0f / t->loss_scale;

  accel_stream_t *s = t->stream;
  CHECK(accel_memcpy_async(s, t->a.lp, t->host_lp, sizeof t->host_lp));
  CHECK(accel_graph_replay(t->graph, s)); /* copy a: the captured step */
  CHECK(accel_memcpy_async(s, t->b.lp, t->host_lp, sizeof t->host_lp));
  CHECK(enqueue_step(s, &t->b));          /* copy b: the same calls, eagerly */
  CHECK(accel_stream_synchronize(s));

  const step_scalars_t *r = t->a.host_report;
  if (memcmp(r, t->b.host_report, sizeof *r) != 0) {
    fprintf(stderr, "step %d: graph and eager results differ\n", step);
    return ACCEL_ERROR_STATE;
  }
  if (r->adam.found_inf != 0.0f) { /* dynamic loss scaling, like torch's GradScaler */
    printf("step %d: loss scale %g: overflow, step skipped\n", step, (double)t->loss_scale);
    t->loss_scale /= 2.0f;
  } else {
    printf("step %d: loss scale %g, grad norm %.6f, clip coef %.6f\n", step,
           (double)t->loss_scale, (double)r->norm, (double)r->clip_coef);
    t->adam_step++;
  }
  return ACCEL_OK;
}

/* Compares the parameters of both copies bit for bit. */
static accel_status_t compare(trainer_t *t) {
  static float pa[NUMEL], pb[NUMEL];
  CHECK(accel_memcpy(t->dev, pa, t->a.fp32, sizeof pa)); /* blocking copies */
  CHECK(accel_memcpy(t->dev, pb, t->b.fp32, sizeof pb));
  size_t nodes = 0;
  CHECK(accel_graph_node_count(t->graph, &nodes));
  printf("graph: %zu nodes, replayed %d times; %u optimizer steps taken\n", nodes, STEPS,
         (unsigned)t->adam_step);
  printf("params[0][0] = %.9g\n", (double)pa[0]);
  int same = memcmp(pa, pb, sizeof pa) == 0;
  printf("graph replay vs eager: %s\n", same ? "bitwise identical" : "DIFFERENT");
  return same ? ACCEL_OK : ACCEL_ERROR_STATE;
}

static accel_status_t run(trainer_t *t, const char *selector) {
  CHECK(accel_device_open(selector, &t->dev)); /* NULL: $ACCEL_BACKEND, else the best */
  accel_device_info_t info;
  CHECK(accel_device_get_info(t->dev, &info));
  printf("device: %s:%d (%s)\n", info.backend, info.index, info.name);
  CHECK(accel_stream_create(t->dev, &t->stream));
  CHECK(optimizer_init(t->dev, t->stream, &t->a));
  CHECK(optimizer_init(t->dev, t->stream, &t->b));
  CHECK(capture(t));
  for (int step = 1; step <= STEPS; ++step) CHECK(train_step(t, step));
  CHECK(compare(t));
  accel_memory_stats_t ms;
  CHECK(accel_memory_stats(t->dev, &ms));
  printf("memory: %llu bytes allocated, %llu reserved, peak %llu\n",
         (unsigned long long)ms.allocated_bytes, (unsigned long long)ms.reserved_bytes,
         (unsigned long long)ms.peak_allocated_bytes);
  return ACCEL_OK;
}

int main(int argc, char **argv) {
  static trainer_t t = {.loss_scale = 65536.0f};
  accel_status_t st = run(&t, argc > 1 ? argv[1] : NULL);
  if (t.graph) accel_graph_destroy(t.graph);
  if (t.stream) accel_stream_destroy(t.stream); /* waits for the stream's work */
  if (t.dev) {
    optimizer_free(t.dev, &t.a);
    optimizer_free(t.dev, &t.b);
    accel_device_close(t.dev);
  }
  return st == ACCEL_OK ? 0 : 1;
}
