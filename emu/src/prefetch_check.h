// Included by the generated instance files inside each target's namespace, after
// the kernel source: checks gemm_common.h's shared_x_pieces, the activation
// prefetch the CTAs of a tile row share (issued on sm_90 only; which CTA and thread
// takes which piece is plain C++, the same on every target). Over every CTA of the
// row and every thread, each (X row, piece) must be issued exactly once, inside the
// tile's rows and the split's k range, with the piece's bytes (a whole number of
// 16-B units, as cp.async.bulk.prefetch requires).
#pragma once
#include <cstdio>
#include <string>
#include <vector>

struct SkPrefetchCase {
  int m, n, k, ldx, k_lo, k_end, m0, prefetch_bytes;
};

template <int TILE_M, int TILE_N, int THREADS>
static std::string sk_check_shared_x(const SkPrefetchCase& cs) {
  char what[200];
  std::snprintf(what, sizeof what, "tile %dx%d, %d threads, M=%d N=%d K=%d ldx=%d, k [%d, %d), m0=%d, %d B: ", TILE_M,
                TILE_N, THREADS, cs.m, cs.n, cs.k, cs.ldx, cs.k_lo, cs.k_end, cs.m0, cs.prefetch_bytes);
  std::vector<u16> x((size_t)cs.m * cs.ldx);
  GemmParams p{};
  p.x = x.data();
  p.m = cs.m, p.n = cs.n, p.k = cs.k, p.ldx = cs.ldx, p.prefetch_row_bytes = cs.prefetch_bytes;
  // The pieces the row must cover: as the kernel cuts them (k from k_lo in steps
  // of len, at most 256 per row), counted independently of its indexing.
  const int len = cs.prefetch_bytes / 2 & ~7;
  const int rows = cs.m - cs.m0 < TILE_M ? cs.m - cs.m0 : TILE_M;
  int pieces = 0;
  for (int k0 = cs.k_lo; k0 < cs.k_end && pieces < 256 && len > 0; k0 += len) ++pieces;
  std::vector<int> hits((size_t)rows * pieces, 0);
  std::string err;
  for (int n0 = 0; n0 < cs.n && err.empty(); n0 += TILE_N) {
    TileCoord c{};
    c.n0 = n0, c.m0 = cs.m0;
    for (int tid = 0; tid < THREADS && err.empty(); ++tid)
      shared_x_pieces<TILE_M, TILE_N, THREADS>(p, c, cs.k_lo, cs.k_end, tid, [&](const u16* at, u32 bytes) {
        const long off = (long)(at - x.data()), row = off / cs.ldx - cs.m0, kk = off % cs.ldx;
        const long piece = len > 0 ? (kk - cs.k_lo) / len : -1;
        const long want = 2L * (len < cs.k_end - kk ? len : cs.k_end - kk);
        if (off < 0 || row < 0 || row >= rows || kk < cs.k_lo || (kk - cs.k_lo) % len != 0 || piece >= pieces)
          err = "a piece outside the tile's rows or the split's k range (row " + std::to_string(row) + ", k " +
                std::to_string(kk) + ")";
        else if ((long)bytes != want || bytes % 16 != 0)
          err = "piece of " + std::to_string(bytes) + " B where " + std::to_string(want) + " are due";
        else
          ++hits[(size_t)(row * pieces + piece)];
      });
  }
  for (size_t i = 0; i < hits.size() && err.empty(); ++i)
    if (hits[i] != 1)
      err = "piece " + std::to_string(i % pieces) + " of row " + std::to_string(i / pieces) + " issued " +
            std::to_string(hits[i]) + " times";
  return err.empty() ? err : what + err;
}

// Every case; "" when all hold.
static std::string sk_prefetch_check() {
  // Decode shapes (one piece per row; several; more pieces than CTAs), a second
  // token tile, a K tail, a padded stride, tiny prefetches capped at 256 pieces,
  // a single N tile, and no prefetch at all.
  const SkPrefetchCase small[] = {
      {5, 5120, 512, 512, 0, 512, 0, 1024},     {1, 384, 7168, 7168, 896, 1792, 0, 1024},
      {8, 16, 4096, 4104, 1024, 2048, 0, 1024}, {3, 2880, 2880, 2880, 2304, 2880, 0, 1024},
      {13, 4096, 6144, 6144, 0, 6144, 8, 16},   {7, 100, 520, 528, 0, 520, 0, 1000},
      {2, 64, 256, 256, 0, 256, 0, 0},
  };
  const SkPrefetchCase large[] = {
      {100, 5120, 6912, 6912, 0, 6912, 0, 1024}, {130, 2112, 7168, 7168, 3584, 7168, 128, 1024},
      {64, 64, 7168, 7200, 0, 448, 0, 1024},
  };
  for (const SkPrefetchCase& cs : small) {
    for (const std::string& e : {sk_check_shared_x<8, 16, 128>(cs), sk_check_shared_x<16, 64, 256>(cs)})
      if (!e.empty()) return e;
  }
  for (const SkPrefetchCase& cs : large) {
    for (const std::string& e : {sk_check_shared_x<128, 64, 160>(cs), sk_check_shared_x<64, 256, 288>(cs)})
      if (!e.empty()) return e;
  }
  return "";
}
