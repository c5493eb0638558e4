/*
 * The whole DeepSpeed-style fp16 step on the device (issue 22), run by test_amp_step.py:
 *
 *   amp_step_program DEVICE eager|graph|lazy DIR   the step sequence of DIR/input.bin;
 *                                                  writes DIR/out-MODE.bin
 *   amp_step_program DEVICE replay STEPS DIR       one capture, STEPS replays with no host
 *                                                  write and no host sync in the loop, then
 *                                                  the same STEPS run eagerly on a second copy;
 *                                                  writes DIR/replay.bin (both copies' state)
 *
 * The step (enqueue_step), captured once in graph mode, called every step in eager and lazy:
 *   found_inf = 0, inv_scale = 1/scale           accel_amp_begin_step
 *   lr <- pinned host memory                      accel_memcpy_async (a captured copy)
 *   "backward": lp = fp16(g * scale)              g: pinned host grads (sequence) or the fp32
 *                                                 master weights (replay: the gradient of
 *                                                 0.5 |w|^2), accel_scale + accel_cast
 *   hp = 0; hp += float(lp), lp = 0               accel_memset_async, accel_update_hp_grads
 *   hp *= inv_scale, found_inf                    accel_unscale_and_check
 *   clip to max_norm                              accel_multi_tensor_norm + clip
 *   step += 1 unless found_inf                    accel_step_count
 *   AdamW on the master weights unless found_inf  accel_fused_adam
 *   model = fp16(master) unless found_inf         accel_cast
 *   loss scale update                             accel_amp_update_scale
 *   state -> pinned report                        accel_memcpy_async (sequence only)
 *
 * input.bin (little endian): u32 ntensors, u32 steps, u32 numel[ntensors], f32 init_scale,
 * i32 growth_interval, f32 growth_factor, f32 backoff_factor, f32 beta1, beta2, eps,
 * weight_decay, max_norm, f32 lr[steps], f32 master[N], f32 grads[steps][N] (N = sum numel).
 * out-MODE.bin: per step {f32 scale, i32 growth_tracker, u32 step, f32 found_inf}, then
 * f32 master[N], exp_avg[N], exp_avg_sq[N], u16 model[N].
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/accel_kernels.h"
#include "require.h"

#define MAX_TENSORS 16

#define CHECK(call) REQUIRE_OK(call, return st_)

/* Device scalars of the step. */
typedef struct step_dev {
  accel_loss_scaler_t scaler;
  float norm, clip_coef;
  accel_adam_args_t adam; /* adam.found_inf: the overflow flag; adam.step: the counter */
} step_dev_t;

typedef struct config {
  uint32_t nt, steps, numel[MAX_TENSORS];
  size_t total;
  float init_scale;
  int32_t growth_interval;
  float growth_factor, backoff_factor, beta1, beta2, eps, wd, max_norm;
  float *lr;     /* [steps] */
  float *master; /* [total] */
  float *grads;  /* [steps][total], NULL in replay mode */
} config_t;

/* One copy of the trainer's state. */
typedef struct trainer {
  float *f32;        /* device: master | hp | exp_avg | exp_avg_sq | g (the scaled grads) */
  uint16_t *f16;     /* device: model | lp */
  step_dev_t *d;     /* device */
  float *host_g;     /* pinned: this step's fp32 grads (sequence mode) */
  float *host_lr;    /* pinned: this step's lr */
  step_dev_t *report; /* pinned: the state after the step (sequence mode) */
  accel_tensor_t master[MAX_TENSORS], hp[MAX_TENSORS], m[MAX_TENSORS], v[MAX_TENSORS],
      g[MAX_TENSORS], model[MAX_TENSORS], lp[MAX_TENSORS];
} trainer_t;

static accel_status_t trainer_init(accel_device_t *dev, accel_stream_t *s, const config_t *c,
                                   trainer_t *t) {
  const size_t N = c->total;
  CHECK(accel_malloc(dev, 5 * N * sizeof(float), (void **)&t->f32));
  CHECK(accel_malloc(dev, 2 * N * sizeof(uint16_t), (void **)&t->f16));
  CHECK(accel_malloc(dev, sizeof(step_dev_t), (void **)&t->d));
  CHECK(accel_host_alloc(dev, N * sizeof(float), (void **)&t->host_g));
  CHECK(accel_host_alloc(dev, sizeof(float), (void **)&t->host_lr));
  CHECK(accel_host_alloc(dev, sizeof(step_dev_t), (void **)&t->report));
  for (size_t i = 0, off = 0; i < c->nt; off += c->numel[i], ++i) {
    const size_t n = c->numel[i];
    t->master[i] = (accel_tensor_t){t->f32 + off, n, ACCEL_F32};
    t->hp[i] = (accel_tensor_t){t->f32 + N + off, n, ACCEL_F32};
    t->m[i] = (accel_tensor_t){t->f32 + 2 * N + off, n, ACCEL_F32};
    t->v[i] = (accel_tensor_t){t->f32 + 3 * N + off, n, ACCEL_F32};
    t->g[i] = (accel_tensor_t){t->f32 + 4 * N + off, n, ACCEL_F32};
    t->model[i] = (accel_tensor_t){t->f16 + off, n, ACCEL_F16};
    t->lp[i] = (accel_tensor_t){t->f16 + N + off, n, ACCEL_F16};
  }
  const step_dev_t init = {
      .scaler = {c->init_scale, 0.0f, 0, c->growth_interval, c->growth_factor, c->backoff_factor},
      .adam = {c->lr[0], c->beta1, c->beta2, c->eps, c->wd, 0, 1, 0.0f}};
  CHECK(accel_memset_async(s, t->f32, 0, 5 * N * sizeof(float)));
  CHECK(accel_memset_async(s, t->f16, 0, 2 * N * sizeof(uint16_t)));
  CHECK(accel_memcpy_async(s, t->f32, c->master, N * sizeof(float)));
  CHECK(accel_memcpy_async(s, t->d, &init, sizeof init));
  /* the model starts as the master weights rounded to fp16 */
  CHECK(accel_cast(s, t->master, t->model, c->nt, NULL));
  return accel_stream_synchronize(s); /* the copies read host memory on the stack */
}

static void trainer_free(accel_device_t *dev, trainer_t *t) {
  accel_free(dev, t->f32);
  accel_free(dev, t->f16);
  accel_free(dev, t->d);
  accel_host_free(dev, t->host_g);
  accel_host_free(dev, t->host_lr);
  accel_host_free(dev, t->report);
}

/* The whole step (see the top of the file). from_host: the grads come from host_g (sequence
 * mode) rather than from the master weights (replay mode). */
static accel_status_t enqueue_step(accel_stream_t *s, const config_t *c, trainer_t *t,
                                   int from_host) {
  step_dev_t *d = t->d;
  const size_t N = c->total;
  CHECK(accel_amp_begin_step(s, &d->scaler, &d->adam.found_inf));
  CHECK(accel_memcpy_async(s, &d->adam.lr, t->host_lr, sizeof(float)));
  if (from_host) CHECK(accel_memcpy_async(s, t->g[0].data, t->host_g, N * sizeof(float)));
  else CHECK(accel_cast(s, t->master, t->g, c->nt, NULL));
  CHECK(accel_scale(s, t->g, c->nt, &d->scaler.scale));
  CHECK(accel_cast(s, t->g, t->lp, c->nt, NULL));
  CHECK(accel_memset_async(s, t->hp[0].data, 0, N * sizeof(float)));
  CHECK(accel_update_hp_grads(s, t->lp, t->hp, c->nt, 1));
  CHECK(accel_unscale_and_check(s, t->hp, c->nt, &d->scaler.inv_scale, &d->adam.found_inf));
  CHECK(accel_multi_tensor_norm(s, t->hp, c->nt, 2.0f, &d->norm));
  CHECK(accel_clip_by_global_norm(s, t->hp, c->nt, c->max_norm, &d->norm, 1e-6f, &d->clip_coef));
  CHECK(accel_step_count(s, &d->adam.step, &d->adam.found_inf));
  CHECK(accel_fused_adam(s, t->master, t->hp, t->m, t->v, c->nt, &d->adam));
  CHECK(accel_cast(s, t->master, t->model, c->nt, &d->adam.found_inf));
  CHECK(accel_amp_update_scale(s, &d->scaler, &d->adam.found_inf));
  if (from_host) CHECK(accel_memcpy_async(s, t->report, d, sizeof *d));
  return ACCEL_OK;
}

static accel_status_t capture(accel_device_t *dev, accel_stream_t *s, const config_t *c,
                              trainer_t *t, int from_host, accel_graph_t **g) {
  CHECK(accel_graph_create(dev, g));
  CHECK(accel_graph_capture_begin(*g, s, NULL, ACCEL_CAPTURE_MODE_GLOBAL));
  accel_status_t st = enqueue_step(s, c, t, from_host);
  accel_status_t end = accel_graph_capture_end(*g);
  if (st == ACCEL_OK) CHECK(end);
  return st;
}

/* Appends the final state of t to f. */
static accel_status_t write_state(accel_device_t *dev, const config_t *c, trainer_t *t, FILE *f) {
  const size_t N = c->total;
  float *buf = malloc(3 * N * sizeof(float) + N * sizeof(uint16_t));
  if (!buf) return ACCEL_ERROR_OUT_OF_MEMORY;
  accel_status_t st = accel_memcpy(dev, buf, t->f32, N * sizeof(float)); /* master */
  if (st == ACCEL_OK) st = accel_memcpy(dev, buf + N, t->f32 + 2 * N, 2 * N * sizeof(float));
  if (st == ACCEL_OK) st = accel_memcpy(dev, buf + 3 * N, t->f16, N * sizeof(uint16_t));
  if (st == ACCEL_OK &&
      fwrite(buf, 1, 3 * N * sizeof(float) + N * sizeof(uint16_t), f) !=
          3 * N * sizeof(float) + N * sizeof(uint16_t))
    st = ACCEL_ERROR_STATE;
  free(buf);
  return st;
}

static int read_all(FILE *f, void *p, size_t bytes) { return fread(p, 1, bytes, f) == bytes; }

static void config_free(config_t *c) {
  free(c->lr);
  free(c->master);
  free(c->grads);
}

/* Fills c from input.bin; c's buffers go back with config_free whatever it returns. */
static int read_config(const char *path, config_t *c) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  int ok = read_all(f, &c->nt, 4) && read_all(f, &c->steps, 4) && c->nt >= 1 &&
           c->nt <= MAX_TENSORS && c->steps >= 1 && read_all(f, c->numel, 4 * c->nt) &&
           read_all(f, &c->init_scale, 4) && read_all(f, &c->growth_interval, 4) &&
           read_all(f, &c->growth_factor, 4) && read_all(f, &c->backoff_factor, 4) &&
           read_all(f, &c->beta1, 4) && read_all(f, &c->beta2, 4) && read_all(f, &c->eps, 4) &&
           read_all(f, &c->wd, 4) && read_all(f, &c->max_norm, 4);
  c->total = 0;
  for (uint32_t i = 0; ok && i < c->nt; ++i) c->total += c->numel[i];
  if (ok) {
    c->lr = malloc(c->steps * sizeof(float));
    c->master = malloc(c->total * sizeof(float));
    c->grads = malloc((size_t)c->steps * c->total * sizeof(float));
    ok = c->lr && c->master && c->grads && read_all(f, c->lr, c->steps * sizeof(float)) &&
         read_all(f, c->master, c->total * sizeof(float)) &&
         read_all(f, c->grads, (size_t)c->steps * c->total * sizeof(float));
  }
  fclose(f);
  return ok;
}

/* The step sequence of input.bin in one mode. */
static accel_status_t run_sequence(accel_device_t *dev, const char *mode, const config_t *c,
                                   const char *dir) {
  const int graph = strcmp(mode, "graph") == 0;
  const unsigned flags = strcmp(mode, "lazy") == 0 ? ACCEL_STREAM_LAZY
                         : graph                   ? ACCEL_STREAM_DEFAULT
                                                   : ACCEL_STREAM_EAGER;
  accel_stream_t *s = NULL;
  accel_graph_t *g = NULL;
  trainer_t t = {0};
  char path[4096];
  snprintf(path, sizeof path, "%s/out-%s.bin", dir, mode);
  FILE *f = fopen(path, "wb");
  accel_status_t st = f ? accel_stream_create_ex(dev, flags, &s) : ACCEL_ERROR_STATE;
  if (st == ACCEL_OK) st = trainer_init(dev, s, c, &t);
  if (st == ACCEL_OK && graph) st = capture(dev, s, c, &t, 1, &g);
  for (uint32_t k = 0; k < c->steps && st == ACCEL_OK; ++k) {
    /* the previous step was synchronized: nothing reads the pinned inputs now */
    memcpy(t.host_g, c->grads + (size_t)k * c->total, c->total * sizeof(float));
    *t.host_lr = c->lr[k];
    st = graph ? accel_graph_replay(g, s) : enqueue_step(s, c, &t, 1);
    if (st == ACCEL_OK) st = accel_stream_synchronize(s);
    const step_dev_t *r = t.report;
    if (st == ACCEL_OK &&
        (fwrite(&r->scaler.scale, 4, 1, f) != 1 || fwrite(&r->scaler.growth_tracker, 4, 1, f) != 1 ||
         fwrite(&r->adam.step, 4, 1, f) != 1 || fwrite(&r->adam.found_inf, 4, 1, f) != 1))
      st = ACCEL_ERROR_STATE;
  }
  if (st == ACCEL_OK) st = write_state(dev, c, &t, f);
  if (st != ACCEL_OK) fprintf(stderr, "%s: %s: %s\n", mode, accel_status_name(st), accel_last_error());
  if (g) accel_graph_destroy(g);
  if (s) accel_stream_destroy(s);
  trainer_free(dev, &t);
  if (f && fclose(f) != 0) st = ACCEL_ERROR_STATE;
  return st;
}

/* One capture, `steps` replays with nothing else in the loop, one synchronize; then the same
 * steps eagerly on a second copy (the replays must have run: same bits). */
static accel_status_t run_replay(accel_device_t *dev, config_t *c, uint32_t steps,
                                 const char *dir) {
  accel_stream_t *s = NULL;
  accel_graph_t *g = NULL;
  trainer_t a = {0}, b = {0};
  char path[4096];
  snprintf(path, sizeof path, "%s/replay.bin", dir);
  FILE *f = fopen(path, "wb");
  accel_status_t st = f ? accel_stream_create(dev, &s) : ACCEL_ERROR_STATE;
  if (st == ACCEL_OK) st = trainer_init(dev, s, c, &a);
  if (st == ACCEL_OK) st = trainer_init(dev, s, c, &b);
  if (st == ACCEL_OK) *a.host_lr = *b.host_lr = c->lr[0];
  if (st == ACCEL_OK) st = capture(dev, s, c, &a, 0, &g);
  /* the loop the trace checks: replays only */
  for (uint32_t k = 0; k < steps && st == ACCEL_OK; ++k) st = accel_graph_replay(g, s);
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  for (uint32_t k = 0; k < steps && st == ACCEL_OK; ++k) st = enqueue_step(s, c, &b, 0);
  if (st == ACCEL_OK) st = accel_stream_synchronize(s);
  step_dev_t da, db;
  if (st == ACCEL_OK) st = accel_memcpy(dev, &da, a.d, sizeof da);
  if (st == ACCEL_OK) st = accel_memcpy(dev, &db, b.d, sizeof db);
  if (st == ACCEL_OK && (fwrite(&da, sizeof da, 1, f) != 1 || fwrite(&db, sizeof db, 1, f) != 1))
    st = ACCEL_ERROR_STATE;
  if (st == ACCEL_OK) st = write_state(dev, c, &a, f);
  if (st == ACCEL_OK) st = write_state(dev, c, &b, f);
  if (st != ACCEL_OK) fprintf(stderr, "replay: %s: %s\n", accel_status_name(st), accel_last_error());
  if (g) accel_graph_destroy(g);
  if (s) accel_stream_destroy(s);
  trainer_free(dev, &a);
  trainer_free(dev, &b);
  if (f && fclose(f) != 0) st = ACCEL_ERROR_STATE;
  return st;
}

int main(int argc, char **argv) {
  const int replay = argc == 5 && strcmp(argv[2], "replay") == 0;
  if (!replay && argc != 4) {
    fprintf(stderr, "usage: amp_step_program DEVICE eager|graph|lazy DIR\n"
                    "       amp_step_program DEVICE replay STEPS DIR\n");
    return 2;
  }
  const char *dir = argv[argc - 1];
  config_t c = {0};
  char path[4096];
  snprintf(path, sizeof path, "%s/input.bin", dir);
  if (!read_config(path, &c)) {
    fprintf(stderr, "amp_step_program: cannot read %s\n", path);
    config_free(&c);
    return 2;
  }
  accel_device_t *dev = NULL;
  if (accel_device_open(argv[1], &dev) != ACCEL_OK) {
    fprintf(stderr, "SKIP: accel_device_open(%s): %s\n", argv[1], accel_last_error());
    config_free(&c);
    return 77;
  }
  accel_status_t st = replay ? run_replay(dev, &c, (uint32_t)strtoul(argv[3], NULL, 10), dir)
                             : run_sequence(dev, argv[2], &c, dir);
  accel_device_close(dev);
  config_free(&c);
  return st == ACCEL_OK ? 0 : 1;
}
