/* A plain C sgemm timing, the yardstick for attn-cli's own BLAS start-up: OpenBLAS's cblas_sgemm
 * on N x N float32 matrices, best of 3 after one warm-up, printed as "core gflops".
 * Built and run by scripts/bench_blas.sh: usage sgemm_rate N THREADS */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

char* openblas_get_corename(void);
void openblas_set_num_threads(int);

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const int n = atoi(argv[1]);
  openblas_set_num_threads(atoi(argv[2]));
  float* a = malloc(sizeof(float) * n * n);
  float* b = malloc(sizeof(float) * n * n);
  float* c = malloc(sizeof(float) * n * n);
  for (long i = 0; i < (long)n * n; ++i) a[i] = (float)(i % 13) / 13.0f, b[i] = (float)(i % 7) / 7.0f;
  double best = 1e30;
  for (int run = 0; run < 4; ++run) {
    const double t0 = seconds();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    const double t = seconds() - t0;
    if (run > 0 && t < best) best = t;
  }
  printf("%s %.1f\n", openblas_get_corename(), 2.0 * n * n * n / best / 1e9);
  free(a), free(b), free(c);
  return 0;
}
