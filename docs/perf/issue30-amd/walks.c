/* The lane walks of the norm, outside the library (docs/PERFORMANCE.md, section 24): 1 GiB of
 * fp32, chunks of 65536 elements claimed by 1 or 2 threads, 256 lane accumulators per chunk,
 * the best of 5 runs of each walk. Every walk computes the same per-lane sums (check).
 *   gcc -O3 -march=x86-64-v4 -fno-math-errno -ffp-contract=off -pthread walks.c -o walks
 *   ./walks 1; ./walks 2
 * bound: the plain loop (64 accumulators); k4: the four-row walk the kernels had, a prefetch
 * per group of 16 lanes and row, 8 rows ahead; k1: one row at a time, accumulators in memory;
 * k1 seq pf / k1p2k / k1p8k: the same with a prefetch per 16 lanes 16 / 8 / 32 KiB ahead; k2:
 * two rows per pass; kreg: 16 vector accumulators (GCC vector extension); k4nopf: k4 without
 * its prefetch; k4seqN(t1): k4 with the pass's 64 lines prefetched in order at its start, N rows
 * ahead (t1: into L2); k1u: one row at a time, the lane loop unrolled completely (GCC keeps the
 * accumulators in registers). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <stdatomic.h>
typedef uint64_t idx;
#define BLOCK 256u
#define CHUNK 65536u
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
/* 4 rows per pass (the kernel) */
__attribute__((noinline)) static float k4(const float *x, idx n){ float a[BLOCK] __attribute__((aligned(64))); for(unsigned l=0;l<BLOCK;l++)a[l]=0; idx r=0;
  for(; n-r>=4*BLOCK; r+=4*BLOCK) for(idx g=0; g<BLOCK; g+=16){
    for(idx k=0;k<4;k++) __builtin_prefetch(x + r + (8+k)*BLOCK + g, 0, 3);
    for(idx l=g;l<g+16;l++){ float v, s=a[l]; v=x[r+l]; s+=v*v; v=x[r+BLOCK+l]; s+=v*v; v=x[r+2*BLOCK+l]; s+=v*v; v=x[r+3*BLOCK+l]; s+=v*v; a[l]=s;} }
  float s=0; for(unsigned l=0;l<BLOCK;l++) s+=a[l]; return s; }
/* 1 row per pass, sequential */
__attribute__((noinline)) static float k1(const float *x, idx n){ float a[BLOCK] __attribute__((aligned(64))); for(unsigned l=0;l<BLOCK;l++)a[l]=0; idx r=0;
  for(; n-r>=BLOCK; r+=BLOCK) for(idx l=0;l<BLOCK;l++){ float v=x[r+l]; a[l]+=v*v; }
  float s=0; for(unsigned l=0;l<BLOCK;l++) s+=a[l]; return s; }
__attribute__((noinline)) static float k1p(const float *x, idx n){ float a[BLOCK] __attribute__((aligned(64))); for(unsigned l=0;l<BLOCK;l++)a[l]=0; idx r=0;
  for(; n-r>=BLOCK; r+=BLOCK) { for(idx g=0;g<BLOCK;g+=16) __builtin_prefetch(x+r+g+4096,0,3); for(idx l=0;l<BLOCK;l++){ float v=x[r+l]; a[l]+=v*v; } }
  float s=0; for(unsigned l=0;l<BLOCK;l++) s+=a[l]; return s; }
/* 4 rows per pass, but group-major within each row pair: rows r,r+1 then r+2,r+3 (2 rows) */
__attribute__((noinline)) static float k2(const float *x, idx n){ float a[BLOCK] __attribute__((aligned(64))); for(unsigned l=0;l<BLOCK;l++)a[l]=0; idx r=0;
  for(; n-r>=2*BLOCK; r+=2*BLOCK) for(idx l=0;l<BLOCK;l++){ float v, s=a[l]; v=x[r+l]; s+=v*v; v=x[r+BLOCK+l]; s+=v*v; a[l]=s;}
  float s=0; for(unsigned l=0;l<BLOCK;l++) s+=a[l]; return s; }
/* registers: 16 vectors */
typedef float v16 __attribute__((vector_size(64)));
__attribute__((noinline)) static float kreg(const float *x, idx n){ v16 a[16]; for(int k=0;k<16;k++) a[k]=(v16){0}; idx r=0;
  for(; n-r>=BLOCK; r+=BLOCK){
#pragma GCC unroll 16
   for(int k=0;k<16;k++){ v16 v; memcpy(&v, x+r+16*k, 64); a[k]+=v*v; } }
  float s=0; for(int k=0;k<16;k++) for(int j=0;j<16;j++) s+=a[k][j]; return s; }

#define K4(name, PFSTMT) __attribute__((noinline)) static float name(const float *x, idx n){ float a[BLOCK] __attribute__((aligned(64))); for(unsigned l=0;l<BLOCK;l++)a[l]=0; idx r=0; \
  for(; n-r>=4*BLOCK; r+=4*BLOCK) { PFSTMT; for(idx g=0; g<BLOCK; g+=16){ \
    for(idx l=g;l<g+16;l++){ float v, s=a[l]; v=x[r+l]; s+=v*v; v=x[r+BLOCK+l]; s+=v*v; v=x[r+2*BLOCK+l]; s+=v*v; v=x[r+3*BLOCK+l]; s+=v*v; a[l]=s;} } } \
  float s=0; for(unsigned l=0;l<BLOCK;l++) s+=a[l]; return s; }
K4(k4nopf, )
K4(k4seq8, for(idx q=0;q<4*BLOCK;q+=16) __builtin_prefetch(x+r+8*BLOCK+q,0,3))
K4(k4seq16, for(idx q=0;q<4*BLOCK;q+=16) __builtin_prefetch(x+r+16*BLOCK+q,0,3))
K4(k4seq16t1, for(idx q=0;q<4*BLOCK;q+=16) __builtin_prefetch(x+r+16*BLOCK+q,0,2))
K4(k4seq32, for(idx q=0;q<4*BLOCK;q+=16) __builtin_prefetch(x+r+32*BLOCK+q,0,3))
#define K1(name, D) __attribute__((noinline)) static float name(const float *x, idx n){ float a[BLOCK] __attribute__((aligned(64))); for(unsigned l=0;l<BLOCK;l++)a[l]=0; idx r=0; \
  for(; n-r>=BLOCK; r+=BLOCK) { for(idx g=0;g<BLOCK;g+=16) __builtin_prefetch(x+r+g+D,0,3); for(idx l=0;l<BLOCK;l++){ float v=x[r+l]; a[l]+=v*v; } } \
  float s=0; for(unsigned l=0;l<BLOCK;l++) s+=a[l]; return s; }
K1(k1p2k, 2048)
K1(k1p8k, 8192)

__attribute__((noinline)) static float k1u(const float *x, idx n){ float a[BLOCK] __attribute__((aligned(64))); for(unsigned l=0;l<BLOCK;l++)a[l]=0; idx r=0;
  for(; n-r>=BLOCK; r+=BLOCK) {
#pragma GCC unroll 256
  for(idx l=0;l<BLOCK;l++){ float v=x[r+l]; a[l]+=v*v; } }
  float s=0; for(unsigned l=0;l<BLOCK;l++) s+=a[l]; return s; }
static float bound_f(const float *x, idx n){ float acc[64]={0}; for(idx i=0;i+64<=n;i+=64) for(int k=0;k<64;k++) acc[k]+=x[i+k]*x[i+k]; float s=0; for(int k=0;k<64;k++) s+=acc[k]; return s;}
typedef float (*ffn)(const float*, idx);
static struct { ffn fn; const float *x; idx n; atomic_size_t next; float out[1<<16]; } J;
static void *work(void *arg){ (void)arg; size_t nch = J.n/CHUNK; for(;;){ size_t c=atomic_fetch_add(&J.next,1); if(c>=nch) break; J.out[c]=J.fn(J.x + c*CHUNK, CHUNK);} return NULL; }
static double run(ffn fn, const float *x, idx n, int th){ J.fn=fn; J.x=x; J.n=n; atomic_store(&J.next,0); pthread_t t[8]; double t0=now(); for(int i=1;i<th;i++) pthread_create(&t[i],0,work,0); work(0); for(int i=1;i<th;i++) pthread_join(t[i],0); return now()-t0; }
int main(int argc,char**argv){ int th=argc>1?atoi(argv[1]):2; size_t bytes=(size_t)1<<30; float *xf=aligned_alloc(4096,bytes);
 for(size_t i=0;i<bytes/4;i++) xf[i]=(float)(i%1000)*1e-3f;
 struct { const char *name; ffn fn; } V[] = { {"bound",bound_f},{"k4 (kernel)",k4},{"k1 seq",k1},{"k1 seq pf",k1p},{"k2",k2},{"kreg",kreg},{"k4nopf",k4nopf},{"k4seq8",k4seq8},{"k4seq16",k4seq16},{"k4seq16t1",k4seq16t1},{"k4seq32",k4seq32},{"k1p2k",k1p2k},{"k1p8k",k1p8k},{"k1u",k1u}};
 int nv=sizeof V/sizeof V[0]; double best[16]; for(int v=0;v<nv;v++) best[v]=1e9;
 for(int rep=0;rep<5;rep++) for(int v=0;v<nv;v++){ double t = run(V[v].fn, xf, bytes/4, th); if(t<best[v]) best[v]=t; }
 for(int v=0;v<nv;v++) printf("%-12s %7.2f ms %6.2f GB/s  check %g\n", V[v].name, best[v]*1e3, bytes/best[v]/1e9, J.out[3]); }
