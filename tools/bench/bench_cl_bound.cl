/*
 * The bandwidth bounds of bench_baseline.h run through an OpenCL device (bench_cl_bound.c): the
 * same streams and the same cheap arithmetic, in the shape that reads fastest on PoCL — each
 * work-item moves contiguous spans of SPAN elements with 16-wide vectors, the spans grid-stride
 * over the work-items (a GPU-style grid stride, work-item l reading l, l + 256, ..., read at a
 * third of this or less). Built twice: AHEAD 0 (plain) and AHEAD 4096 (every stream prefetched
 * that many elements ahead, as the host loops do).
 */
#define SPAN 65536ul
#define V 16ul

#if AHEAD
#define PREFETCH(p, i) __builtin_prefetch((const __global char *)((p) + (i) + AHEAD), 0, 3)
#else
#define PREFETCH(p, i) ((void)0)
#endif

static inline float bf16_to_f32(ushort b) { return as_float((uint)b << 16); }
static inline float16 bf16x16_to_f32(ushort16 b) { return as_float16(convert_uint16(b) << 16); }

/* The span loop: [s, e) is this work-item's next span; VEC_BODY on the STEP elements from i
 * (a multiple of V), TAIL on each element i of the rest. */
#define SPANS(n, STEP, VEC_BODY, TAIL)                                             \
  for (ulong s = get_global_id(0) * SPAN; s < (n); s += get_global_size(0) * SPAN) { \
    const ulong e = s + SPAN < (n) ? s + SPAN : (n);                               \
    ulong i = s;                                                                   \
    for (; i + (STEP) <= e; i += (STEP)) { VEC_BODY }                              \
    for (; i < e; i++) { TAIL }                                                    \
  }

/* Sum of squares of x[0..n): out[work-item] = its partial (so nothing is optimised away). */
__kernel void bound_read(__global const float *x, ulong n, __global float *out) {
  float16 a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  float t = 0.0f;
  SPANS(n, 4 * V,
        PREFETCH(x, i); PREFETCH(x, i + V); PREFETCH(x, i + 2 * V); PREFETCH(x, i + 3 * V);
        const float16 v0 = vload16(0, x + i); const float16 v1 = vload16(1, x + i);
        const float16 v2 = vload16(2, x + i); const float16 v3 = vload16(3, x + i);
        a0 += v0 * v0; a1 += v1 * v1; a2 += v2 * v2; a3 += v3 * v3;,
        t += x[i] * x[i];)
  const float16 a = a0 + a1 + a2 + a3;
  const float8 h = a.lo + a.hi;
  const float4 q = h.lo + h.hi;
  out[get_global_id(0)] = t + q.x + q.y + q.z + q.w;
}

/* The same over bf16 elements, widened. */
__kernel void bound_read_bf16(__global const ushort *x, ulong n, __global float *out) {
  float16 a0 = 0.0f, a1 = 0.0f;
  float t = 0.0f;
  SPANS(n, 2 * V,
        PREFETCH(x, i);
        const float16 v0 = bf16x16_to_f32(vload16(0, x + i));
        const float16 v1 = bf16x16_to_f32(vload16(1, x + i));
        a0 += v0 * v0; a1 += v1 * v1;,
        t += bf16_to_f32(x[i]) * bf16_to_f32(x[i]);)
  const float16 a = a0 + a1;
  const float8 h = a.lo + a.hi;
  const float4 q = h.lo + h.hi;
  out[get_global_id(0)] = t + q.x + q.y + q.z + q.w;
}

/* hp[i] += float(lp[i]) (bf16), and lp[i] = 0 in bound_hp_zero. */
#define HP_KERNEL(name, ZERO)                                                      \
  __kernel void name(__global ushort *lp, __global float *hp, ulong n) {          \
    SPANS(n, V,                                                                    \
          PREFETCH(lp, i); PREFETCH(hp, i);                                        \
          vstore16(vload16(0, hp + i) + bf16x16_to_f32(vload16(0, lp + i)), 0, hp + i); \
          if (ZERO) vstore16((ushort16)0, 0, lp + i);,                             \
          hp[i] += bf16_to_f32(lp[i]);                                             \
          if (ZERO) lp[i] = 0;)                                                    \
  }
HP_KERNEL(bound_hp, 0)
HP_KERNEL(bound_hp_zero, 1)

/* AdamW's streams (bench_baseline.c's adam_elems): read p, g, m, v; write p, m, v; every
 * stream read before any is written, as there. */
#define ADAM(T, LD, ST)                                                            \
  {                                                                                \
    const T gi = LD(g), pi = LD(p), mi = 0.9f * LD(m) + 0.1f * gi;                 \
    const T vi = 0.999f * LD(v) + 0.001f * gi * gi;                                \
    ST(mi, m);                                                                     \
    ST(vi, v);                                                                     \
    ST(0.999f * pi - 1e-3f * mi, p);                                               \
  }
#define LD16(a) vload16(0, (a) + i)
#define ST16(x, a) vstore16((x), 0, (a) + i)
#define LD1(a) (a)[i]
#define ST1(x, a) ((a)[i] = (x))

__kernel void bound_adam(__global float *p, __global const float *g, __global float *m,
                         __global float *v, ulong n) {
  SPANS(n, V,
        PREFETCH(p, i); PREFETCH(g, i); PREFETCH(m, i); PREFETCH(v, i);
        ADAM(float16, LD16, ST16),
        ADAM(float, LD1, ST1))
}

/* The optimizer step's compulsory traffic (bench_bound_step): per tile of TILE elements the
 * grads half (hp = float(lp) * inv_scale, lp = 0 in place) then the AdamW half on the same
 * tile, which finds hp in cache; every DRAM array is read or written once. */
#define TILE 2048ul
__kernel void bound_step(__global ushort *lp, __global float *hp, __global float *p,
                         __global float *m, __global float *v, ulong n, float inv_scale) {
  for (ulong s = get_global_id(0) * SPAN; s < n; s += get_global_size(0) * SPAN) {
    const ulong e = s + SPAN < n ? s + SPAN : n;
    for (ulong t = s; t < e; t += TILE) {
      const ulong te = t + TILE < e ? t + TILE : e;
      ulong i = t;
      for (; i + V <= te; i += V) {
        PREFETCH(lp, i);
        vstore16(bf16x16_to_f32(vload16(0, lp + i)) * inv_scale, 0, hp + i);
        vstore16((ushort16)0, 0, lp + i);
      }
      for (; i < te; i++) {
        hp[i] = bf16_to_f32(lp[i]) * inv_scale;
        lp[i] = 0;
      }
      __global const float *g = hp;
      for (i = t; i + V <= te; i += V) {
        PREFETCH(p, i); PREFETCH(m, i); PREFETCH(v, i);
        ADAM(float16, LD16, ST16)
      }
      for (; i < te; i++) ADAM(float, LD1, ST1)
    }
  }
}
