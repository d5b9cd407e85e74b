// Runs one traced kernel of ktrace.ptx (ktrace_kernels.cu) over a K-split sweep and prints, per
// split: the time per launch (back-to-back, rotated cold weights) and, for isolated launches on
// cold weights ("cold"), after another launch ("warm") and on the same weights again ("hot"), the
// kernel's span and the median per-CTA phase times from the SK_TRACE timestamps. Driver API only.
//   ktrace PTX NAME TILE_M TILE_N TILE_K CLUSTER(0/1) TMA(0/1) M N K SPLITS...
#include <cuda.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_; cuGetErrorString(r_, &s_); \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_); exit(1); } } while (0)

struct GemmParams {
  uint64_t w, x, y, bias, partials, counters, zeros;
  int64_t ldw, ldx, ldy;
  int32_t m, n, k;
  float alpha;
  int32_t split_k, prefetch_row_bytes, pdl_flags;
};
static_assert(sizeof(GemmParams) == 112, "layout");
struct alignas(64) Maps { CUtensorMap w, x; };

static CUtensorMap map2d(CUdeviceptr base, uint64_t cols, uint64_t rows, uint64_t row_bytes, uint32_t box_rows) {
  CUtensorMap m;
  cuuint64_t dims[2] = {cols, rows}, strides[1] = {row_bytes};
  cuuint32_t box[2] = {64, box_rows}, es[2] = {1, 1};
  CU(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, (void*)base, dims, strides, box, es,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return m;
}

static double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  if (argc < 10) {
    fprintf(stderr, "usage: ktrace PTX NAME TM TN TK CLUSTER(0/1) TMA(0/1) M N K S...\n");
    return 2;
  }
  const char* ptx_path = argv[1];
  const std::string name = argv[2];
  const int TM = atoi(argv[3]), TN = atoi(argv[4]), TK = atoi(argv[5]);
  const bool cluster = atoi(argv[6]), tma = atoi(argv[7]);
  const int M = atoi(argv[8]), N = atoi(argv[9]), K = atoi(argv[10]);
  std::vector<int> splits;
  for (int i = 11; i < argc; ++i) splits.push_back(atoi(argv[i]));

  CU(cuInit(0));
  CUdevice dev; CU(cuDeviceGet(&dev, 0));
  CUcontext ctx; CU(cuDevicePrimaryCtxRetain(&ctx, dev)); CU(cuCtxSetCurrent(ctx));
  std::ifstream f(ptx_path); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
  static CUmodule mod = nullptr;
  if (!mod) CU(cuModuleLoadData(&mod, ptx.c_str()));
  CUfunction fn; CU(cuModuleGetFunction(&fn, mod, name.c_str()));
  CUdeviceptr meta_p, trace_p; size_t sz;
  CU(cuModuleGetGlobal(&meta_p, &sz, mod, (name + "_meta").c_str()));
  CU(cuModuleGetGlobal(&trace_p, &sz, mod, "sk_trace_buf"));
  int meta[2]; CU(cuMemcpyDtoH(meta, meta_p, 8));
  const int threads = meta[0], lds = meta[1];
  printf("meta %s threads=%d lds_bytes=%d\n", name.c_str(), threads, lds);
  CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, lds));

  const int NBUF = 12;
  const size_t wbytes = (size_t)N * K * 2;
  std::vector<CUdeviceptr> w(NBUF);
  for (auto& p : w) { CU(cuMemAlloc(&p, wbytes)); CU(cuMemsetD16(p, 0x3c00, wbytes / 2)); }
  CUdeviceptr x, y, partials, counters, zeros;
  CU(cuMemAlloc(&x, (size_t)M * K * 2)); CU(cuMemsetD16(x, 0x3c00, (size_t)M * K));
  CU(cuMemAlloc(&y, (size_t)M * N * 2));
  const int tiles = ((M + TM - 1) / TM) * ((N + TN - 1) / TN);
  CU(cuMemAlloc(&partials, (size_t)tiles * 16 * TM * TN * 4));
  CU(cuMemAlloc(&counters, tiles * 4)); CU(cuMemsetD32(counters, 0, tiles));
  CU(cuMemAlloc(&zeros, 256)); CU(cuMemsetD8(zeros, 0, 256));
  std::vector<Maps> maps(NBUF);
  for (int i = 0; i < NBUF; ++i) {
    maps[i].w = map2d(w[i], K, N, (uint64_t)K * 2, TN);
    maps[i].x = map2d(x, K, M, (uint64_t)K * 2, TM);
  }
  CUstream st; CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  CUevent e0, e1; CU(cuEventCreate(&e0, 0)); CU(cuEventCreate(&e1, 0));

  for (int S : splits) {
    std::vector<GemmParams> params(NBUF);
    for (int i = 0; i < NBUF; ++i) {
      GemmParams& p = params[i];
      memset(&p, 0, sizeof p);
      p.w = w[i]; p.x = x; p.y = y; p.partials = partials; p.counters = counters; p.zeros = zeros;
      p.ldw = K; p.ldx = K; p.ldy = N; p.m = M; p.n = N; p.k = K; p.alpha = 1.f; p.split_k = S;
    }
    auto launch = [&](int i) {
      CUlaunchConfig cfg; memset(&cfg, 0, sizeof cfg);
      cfg.gridDimX = tiles; cfg.gridDimY = S; cfg.gridDimZ = 1;
      cfg.blockDimX = threads; cfg.blockDimY = 1; cfg.blockDimZ = 1;
      cfg.sharedMemBytes = lds; cfg.hStream = st;
      CUlaunchAttribute at[1];
      if (cluster && S > 1) {
        at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at[0].value.clusterDim.x = 1; at[0].value.clusterDim.y = S; at[0].value.clusterDim.z = 1;
        cfg.attrs = at; cfg.numAttrs = 1;
      }
      void* args[2] = {&params[i], &maps[i]};
      CU(cuLaunchKernelEx(&cfg, fn, args, nullptr));
    };
    // Back-to-back: time per launch, median of 5 x 24 launches.
    std::vector<double> per;
    for (int rep = 0; rep < 5; ++rep) {
      CU(cuEventRecord(e0, st));
      for (int i = 0; i < 24; ++i) launch(i % NBUF);
      CU(cuEventRecord(e1, st)); CU(cuEventSynchronize(e1));
      float ms; CU(cuEventElapsedTime(&ms, e0, e1)); per.push_back(ms * 1000 / 24);
    }
    // Traced launches, median over 5 of the span and of per-CTA phase times. Modes:
    // cold = isolated launch on cold weights; hot = the same weights launched just before
    // (W and code in L2); warm = another (cold) weight set's launch just before, unsynchronised.
    const int ctas = tiles * S;
    std::vector<unsigned long long> tr(ctas * 8);
    for (const char* mode : {"cold", "warm", "hot"}) {
      std::vector<double> span, ph[7], end_main_max, pre6, post6;
      for (int rep = 0; rep < 5; ++rep) {
        CU(cuMemsetD8(trace_p, 0, ctas * 64));
        CU(cuStreamSynchronize(st));
        const int buf = (rep * 5 + 3) % NBUF;
        if (!strcmp(mode, "hot")) { launch(buf); CU(cuStreamSynchronize(st)); }
        if (!strcmp(mode, "warm")) launch((buf + 1) % NBUF);
        launch(buf);
        CU(cuStreamSynchronize(st));
        CU(cuMemcpyDtoH(tr.data(), trace_p, ctas * 64));
        unsigned long long t0 = ~0ull, t5 = 0;
        std::vector<double> p[7], em, a6, b6;
        for (int c = 0; c < ctas; ++c) {
          unsigned long long* t = &tr[c * 8];
          if (t[6] && t[3] <= t[6] && t[6] <= t[4]) {  // splitk order: t3 < t6 < t4
            a6.push_back((t[6] - t[3]) / 1000.0); b6.push_back((t[4] - t[6]) / 1000.0);
            t[6] = t[4];
          }
          if (!t[6]) t[6] = t[4];
          if (!t[5]) t[5] = t[6];
          t0 = std::min(t0, t[0]); t5 = std::max(t5, t[5]);
          const unsigned long long seq[7] = {t[0], t[1], t[2], t[3], t[4], t[6], t[5]};
          for (int k = 1; k < 7; ++k) p[k].push_back((double)(seq[k] - seq[k - 1]) / 1000.0);
        }
        for (int c = 0; c < ctas; ++c) em.push_back((double)(tr[c * 8 + 3] - t0) / 1000.0);
        span.push_back((t5 - t0) / 1000.0);
        end_main_max.push_back(*std::max_element(em.begin(), em.end()));
        for (int k = 1; k < 7; ++k) ph[k].push_back(median(p[k]));
        pre6.push_back(median(a6)); post6.push_back(median(b6));
      }
      std::vector<int> per_sm(256, 0);
      for (int c = 0; c < ctas; ++c) per_sm[tr[c * 8 + 7] & 255]++;
      const int busiest = *std::max_element(per_sm.begin(), per_sm.end());
      printf("%s M=%d N=%d K=%d S=%d ctas=%d lds=%dK per_launch=%.2f %s span=%.2f main_end_max=%.2f max_per_sm=%d | "
             "prologue=%.2f first=%.2f main=%.2f stage=%.2f wait=%.2f reduce_store=%.2f (splitk: to_sync=%.2f after_sync=%.2f)\n",
             name.c_str(), M, N, K, S, ctas, lds / 1024, median(per), mode, median(span), median(end_main_max), busiest,
             median(ph[1]), median(ph[2]), median(ph[3]), median(ph[4]), median(ph[5]), median(ph[6]), median(pre6), median(post6));
    }
    fflush(stdout);
  }
  return 0;
}
