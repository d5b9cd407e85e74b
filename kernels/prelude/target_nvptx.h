// sm_90 pieces of the prelude (clang CUDA mode, -nocudainc: builtins and inline PTX only).
#pragma once
#include "../gemm_params.h"  // TensorMap, the tensor-copy operand

#define SK_DEVICE __attribute__((device)) SK_INLINE
#define SK_KERNEL(threads) extern "C" __attribute__((global)) __attribute__((launch_bounds(threads)))
// Shared memory is dynamic on NVIDIA: configs beyond 48 KiB need the opt-in the
// runtime makes at load time.
#define SK_LDS_DECL(name, bytes) extern __attribute__((shared)) __attribute__((aligned(16))) char name[]

constexpr int WAVE = 32;
constexpr int ATOM_TOKS = 8;     // mma.m16n8k16: weights on the 16-row side ("swap AB")
constexpr int ATOM_A_PIECES = 2; // rows g and g+8
constexpr int COPY_BYTES = 16;   // cp.async.cg 16 B
constexpr bool COPY_BY_WAVE = false;  // each thread picks its own LDS destination

// 2^x to about 2 ulp (ex2.approx; the epilogue's GELU needs no more).
// One fp32 from global memory, as an instruction of its own: written as
// `ptr ? *ptr : param`, the compiler turned the choice into one unconditional
// generic load from a selected address, a memory round trip in every epilogue
// (0.26 us of N = 64, K = 7168, measured on the H100).
SK_DEVICE float load_global_f32(const float* p) {
  float v;
  asm volatile("ld.global.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}
SK_DEVICE float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
// 1/x to about 1 ulp (an IEEE division is a long sequence with a slow-path call:
// code every epilogue would carry, cold).
SK_DEVICE float fast_rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
SK_DEVICE int thread_id() { return __nvvm_read_ptx_sreg_tid_x(); }
SK_DEVICE int block_x() { return __nvvm_read_ptx_sreg_ctaid_x(); }
SK_DEVICE int block_y() { return __nvvm_read_ptx_sreg_ctaid_y(); }
SK_DEVICE void barrier() { __nvvm_bar_sync(0); }

// Swizzle for 32 banks of 4 B (128 B per 8 lanes of a 16-B access). The atom's
// reads take rows {2j, 2j+1} x 4 chunks per 8 lanes: the two rows must land in
// different 64-B halves, and rows 0..7 reading one chunk (AMD-like patterns in
// the X tile) must be a permutation.
template <int ROW_BYTES>
SK_DEVICE int target_swizzle(int row) { return ((row & 1) << 2) | ((row >> 1) & 3); }

SK_DEVICE u32 smem_addr(const void* p) {
  return (u32)(u64)(const __attribute__((address_space(3))) void*)p;
}

SK_DEVICE u32x4 lds_load16(const char* p) {
  u32x4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(smem_addr(p)));
  return v;
}

SK_DEVICE u32x4 global_load16(const void* p) {
  u32x4 v;
  // Streamed once: L1-bypassing, evict-first in L2.
  asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// Asynchronous 16-B copy global -> LDS at the thread's own destination; when
// !valid, reads nothing and zero-fills (g then points at the zero page).
SK_DEVICE void copy_async(char* lds, char* /*group_base*/, const void* g, bool valid, const void* /*zeros*/) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :: "r"(smem_addr(lds)), "l"(g), "r"(valid ? 16 : 0) : "memory");
}
SK_DEVICE void copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until at most `PENDING` committed stages are still in flight.
template <int PENDING, int COPIES_PER_STAGE>
SK_DEVICE void copy_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(PENDING) : "memory"); }

// ---- split-K handshake: device-scope release/acquire ----
#include "scoped_atomics.h"
// Split-K arrival. The CTA barrier orders every thread's slot writes before
// thread 0's device-scope release (PTX release is cumulative over what the
// barrier made visible to it); thread 0's acquire plus the second barrier order
// the last CTA's loads after every other CTA's release. One fence per CTA, not
// one per thread (the pattern of CUTLASS's split-K semaphore).
SK_DEVICE bool arrive_last(u32* counter, u32 splits, int tid, u32* flag) {
  barrier();
  if (tid == 0) {
    fence_release_device();
    const u32 prev = __scoped_atomic_fetch_add(counter, 1u, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
    const bool last = prev == splits - 1;
    if (last) fence_acquire_device();
    *flag = last;
  }
  barrier();
  return *flag != 0;
}
// ---- programmatic dependent launch (sm_90) ----
// Lets a kernel launched after ours with PDL start before ours has finished.
SK_DEVICE void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
// Returns once every prerequisite grid has completed and its writes are visible
// (at once when the kernel was launched without PDL).
SK_DEVICE void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// Pulls `bytes` (16-B aligned, a multiple of 16) into L2. Only a hint: L2 is the
// device's point of coherence, so a prefetch issued before pdl_wait() can never
// make a later load see data older than the previous kernel's writes.
SK_DEVICE void prefetch_l2(const void* p, u32 bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p), "r"(bytes) : "memory");
}
// ---- thread-block clusters (sm_90): split-K through distributed shared memory ----
constexpr bool HAS_CLUSTERS = true;
// Largest cluster the kernels combine (16 is sm_90's non-portable maximum).
constexpr int MAX_CLUSTER = 16;
// Shared memory per SM (228 KiB on sm_90) and what the hardware keeps per CTA: what
// decides how many CTAs of a kernel fit on an SM.
constexpr int SM_LDS_BYTES = 228 << 10;
constexpr int LDS_RESERVED_PER_CTA = 1024;
SK_DEVICE u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster; release/acquire order the shared-memory
// writes before it with the remote reads after it.
SK_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Reads 16 B at the same shared-memory offset as `local`, in CTA `rank` of the cluster.
SK_DEVICE f32x4 cluster_load16(const void* local, u32 rank) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(local)), "r"(rank));
  f32x4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
  return v;
}
SK_DEVICE void store_partial(float* p, f32x4 v) {
  asm volatile("st.global.cg.v4.f32 [%0], {%1,%2,%3,%4};" :: "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}

// ---- transaction barriers (sm_90): TMA stages and the cluster combine's hand-offs ----
// mbarrier in shared memory: `count` arrivals plus the expected transaction bytes
// complete a phase.
SK_DEVICE void mbar_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the async proxy (TMA) and the cluster.
SK_DEVICE void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
SK_DEVICE void mbar_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}
// One arrival that also announces `bytes` the phase must receive before completing.
SK_DEVICE void mbar_arrive_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}
// Waits until the phase of parity `parity` has completed (try_wait suspends the
// thread for a while in hardware; the loop covers its time limit). CLUSTER_ACQUIRE:
// what other CTAs of the cluster released onto the barrier (remote arrivals,
// asynchronous remote stores) is visible after it.
template <bool CLUSTER_ACQUIRE = false>
SK_DEVICE void mbar_wait(u64* bar, u32 parity) {
  u32 done;
  do {
    if constexpr (CLUSTER_ACQUIRE)
      asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                   : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
    else
      asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                   : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
  } while (!done);
}
SK_DEVICE void mbar_wait_cluster(u64* bar, u32 parity) { mbar_wait<true>(bar, parity); }
// One arrival, with cluster-scope release, on the barrier at `bar`'s offset in CTA `rank`.
SK_DEVICE void mbar_arrive_remote(u64* bar, u32 rank) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
}
// Writes 16 B at `dst`'s offset in CTA `rank` and completes them, as transaction
// bytes, on the barrier at `bar`'s offset there: fire and forget for the writer.
SK_DEVICE void store16_remote_async(void* dst, u32 rank, f32x4 v, u64* bar) {
  u32 rd, rb;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rd) : "r"(smem_addr(dst)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rb) : "r"(smem_addr(bar)), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
               :: "r"(rd), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(rb) : "memory");
}
// A cluster barrier in two halves: arrive (no ordering) when the kernel starts, wait
// before the first remote access; by then every CTA has long arrived, so the wait is
// nearly free, unlike a full barrier at the end (about 0.5 us on the H100).
SK_DEVICE void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;"); }
SK_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }

// ---- the matrix atom: mma.sync.m16n8k16, two per 32 k ----
// Lane (g = lane/4, t = lane%4). Each operand piece is 8 consecutive k of one row.
// The k order inside the 32-k step is permuted identically for A and B (a dot
// product does not care): lane t owns real k [8t, 8t+8), which it feeds as the
// mma's k {2t,2t+1,2t+8,2t+9} of step 0 (words 0,1) and of step 1 (words 2,3).
// So both operands load as one 16-B run per row — no ldmatrix, no shuffles.
// Layouts: PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"
// (https://docs.nvidia.com/cuda/parallel-thread-execution/).
SK_DEVICE void atom_a_piece(int lane, int j, int& row, int& piece) { row = (lane >> 2) + 8 * j; piece = lane & 3; }
SK_DEVICE void atom_b_piece(int lane, int& tok, int& piece) { tok = lane >> 2; piece = lane & 3; }
// Accumulator r of a lane holds D(row, tok).
SK_DEVICE void atom_acc_coord(int lane, int r, int& row, int& tok) {
  row = (lane >> 2) + 8 * (r >> 1);
  tok = 2 * (lane & 3) + (r & 1);
}

template <typename T> struct mma_name;
SK_DEVICE void mma16816(bf16_t, float* c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
SK_DEVICE void mma16816(f16_t, float* c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// fp8 (OCP E4M3): the same registers carry 4 k per word, so one m16n8k32 takes
// what one m16n8k16 of 16-bit elements does, byte for byte (A regs: (g, k 4t..)
// (g+8, 4t..) (g, 16+4t..) (g+8, 16+4t..); PTX ISA, "Matrix Fragments for
// mma.m16n8k32"): the atom's 32 units are 64 fp8 k, in the same permuted order for
// A and B.
SK_DEVICE void mma16816(e4m3_t, float* c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <typename T>
SK_DEVICE void atom_mma_k32(float* acc, const u32x4* a, const u32x4& b) {
  // a[0] = row g, a[1] = row g+8; mma A regs: (g,k0-1) (g+8,k0-1) (g,k8-9) (g+8,k8-9).
  mma16816(T{}, acc, a[0].x, a[1].x, a[0].y, a[1].y, b.x, b.y);
  mma16816(T{}, acc, a[0].z, a[1].z, a[0].w, a[1].w, b.z, b.w);
}

// ---- the virtual-dense sparse atom (family VDMFMA): mma.sp::ordered_metadata.m16n8k32 ----
// Tokens are the sparse A operand, weights the dense B operand: logical token g
// (0..7) is physical rows g and g+8 of A; the constant metadata 0xEEEE4444 (bits
// [15:0] = row g, [31:16] = row g+8: PTX ISA, "Matrix Fragments for sparse
// mma.m16n8k32"; measured on H100) keeps k positions {0,1} of every 4-group in row g
// and {2,3} in row g+8, so the pair carries one dense row, and D rows g and g+8 add
// up to token g: y[g][2t] = d0 + d2, y[g][2t+1] = d1 + d3. Per instruction: 8 output
// features (the mma's n) x 8 tokens x 32 dense k, so VD_ROWS = 8.
//
// A step is two instructions (64 k, pieces 0..7 of 8 k). Fragment layouts (PTX ISA
// "Matrix Fragments for sparse mma.m16n8k32"): A reg0/reg2 =
// row g, k-chunks t / t+4 (k 4t.. / 16+4t..), reg1/reg3 = row g+8, same chunks; B
// reg r = k {2t, 2t+1} + 8r, column g. Any permutation of k applied to both
// operands leaves the dot product unchanged; this one makes every operand piece a
// 16-byte run of 8 consecutive k (no shuffles): lane (g, t) holds token g's pieces
// 2t, 2t+1 (X0, X1) and weight row g's pieces t, t+4 (W0, W1), and instruction s
// takes A = {X0.d[2s], X1.d[2s], X0.d[2s+1], X1.d[2s+1]} and B = {W0.d[2s], W1.d[2s],
// W0.d[2s+1], W1.d[2s+1]} (d = 32-bit word: k pair). Derivation: physical k pair p of
// instruction s <-> logical piece p%8, word 2s + p/8, for A and B alike.
constexpr int VD_ROWS = 8;      // weight rows (output features) per instruction group
constexpr int VD_TOKS = 8;
constexpr int VD_K = 64;        // dense k per step (two instructions)
constexpr int VD_W_PIECES = 2;  // weight pieces per lane per step
constexpr int VD_X_PIECES = 2;  // token pieces per lane per step
constexpr int VD_ACC = 4;       // physical accumulators per lane
constexpr u32 VD_METADATA = 0xEEEE4444u;
// fp8 (OCP E4M3): mma.sp::ordered_metadata.m16n8k64 .e4m3. The PTX ISA shows its
// fragments as figures only; measured on H100 (one-hot A and B bytes, then one
// metadata nibble at a time), with 4-groups c = 0..15 of k numbered as B holds them:
//  * B reg r of lane (g, t) = 4-group 4t + r, whole, column g;
//  * A reg0 = row g, the kept pairs of 4-groups c0 and c0 + 4 (c0 = 8(t&1) + t/2),
//    reg2 = of 4-groups c0 + 2 and c0 + 6, reg1/reg3 = the same for row g+8;
//  * the metadata: one row per lane, even t row g, odd t row g+8, 8 nibbles each
//    (so 0x44444444 in even lanes, 0xEEEEEEEE in odd ones: vd_meta).
// A 4-group of fp8 is one 32-bit word, so a row keeping positions {0,1} needs the low
// 2 bytes of two groups in one A register and the {2,3} row their high 2 bytes: as on
// AMD (amd_layouts.h), B stays whole weight words and A is packed from whole token
// words with one prmt per register. 4-group 4t + r of instruction s is word
// 2s + r/2 of logical piece t + 4(r%2), for both operands: the weight lane (g, t)
// holds pieces t, t+4 and the token lane pieces 2t, 2t+1, as in 16 bits, and
// instruction s takes B = {W0[2s], W1[2s], W0[2s+1], W1[2s+1]}, A = the low and high
// byte pairs of {X0[2s], X1[2s]}, then of {X0[2s+1], X1[2s+1]}.
constexpr bool VD_HAS_FP8 = true;
constexpr int VD_X_PIECES_FP8 = 2;

SK_DEVICE void vd_w_piece(int lane, int j, int& row, int& piece) { row = lane >> 2; piece = (lane & 3) + 4 * j; }
template <bool FP8>
SK_DEVICE void vd_x_piece(int lane, int j, int& tok, int& piece) { tok = lane >> 2; piece = 2 * (lane & 3) + j; }
// Swizzle (chunk XOR) of the token tile's rows: a 16-B shared load is served 8 lanes
// per phase, i.e. tokens g, g+1 x chunks {0, 2, 4, 6} + j; XOR with row & 1 sends the
// two rows to the even and the odd chunks of the 128-B bank line. (cp.async writes,
// 8 consecutive chunks of one row per phase, stay conflict-free under any XOR < 8.)
template <int ROW_BYTES>
SK_DEVICE int vd_x_swizzle(int row) { return row & 1; }
// Metadata word of a lane (16 bits: the same in every lane; fp8: by lane parity).
template <bool FP8>
SK_DEVICE u32 vd_meta(int lane) { return FP8 ? (lane & 1 ? 0xEEEEEEEEu : 0x44444444u) : VD_METADATA; }
// Collapsed output r (0, 1) of a lane: token g, feature 2t + r.
SK_DEVICE void vd_out_coord(int lane, int r, int& row, int& tok) { row = 2 * (lane & 3) + r; tok = lane >> 2; }
SK_DEVICE void vd_collapse(const float* acc, float* out) {
  out[0] = acc[0] + acc[2];
  out[1] = acc[1] + acc[3];
}

SK_DEVICE void mma_sp16832(bf16_t, float* c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1, u32 b2, u32 b3, u32 e) {
  asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0;"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(b2), "r"(b3), "r"(e));
}
SK_DEVICE void mma_sp16832(f16_t, float* c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1, u32 b2, u32 b3, u32 e) {
  asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0;"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(b2), "r"(b3), "r"(e));
}

SK_DEVICE void mma_sp16864(e4m3_t, float* c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1, u32 b2, u32 b3, u32 e) {
  asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0;"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(b2), "r"(b3), "r"(e));
}
// prmt.b32: result byte i = byte (selector nibble i) of {hi:lo}.
SK_DEVICE u32 byte_perm(u32 lo, u32 hi, u32 select) {
  u32 r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(select));
  return r;
}

// One step of one instruction group: w = W0, W1 (weight row g), x = X0, X1 (token g);
// 64 k in 16 bits, 128 k in fp8 (the A packing above).
template <typename T>
SK_DEVICE void vd_mma(float* acc, const u32x4* w, const u32x4* x, u32 meta) {
  if constexpr (T::fp8) {
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const u32 lo0 = x[0][2 * s], lo1 = x[1][2 * s], hi0 = x[0][2 * s + 1], hi1 = x[1][2 * s + 1];
      mma_sp16864(T{}, acc, byte_perm(lo0, lo1, 0x5410u), byte_perm(lo0, lo1, 0x7632u), byte_perm(hi0, hi1, 0x5410u),
                  byte_perm(hi0, hi1, 0x7632u), w[0][2 * s], w[1][2 * s], w[0][2 * s + 1], w[1][2 * s + 1], meta);
    }
  } else {
    mma_sp16832(T{}, acc, x[0].x, x[1].x, x[0].y, x[1].y, w[0].x, w[1].x, w[0].y, w[1].y, meta);
    mma_sp16832(T{}, acc, x[0].z, x[1].z, x[0].w, x[1].w, w[0].z, w[1].z, w[0].w, w[1].w, meta);
  }
}

// ---- warpgroup MMA (sm_90a only: family Wgmma, kernels/wgmma_gemm.h) ----
// Facts and sources: docs/design.md, section 8.3 (PTX ISA, "Asynchronous Warpgroup
// Level Matrix Instructions", cross-checked against CUTLASS). A warpgroup is 4
// consecutive warps (128 threads); every wgmma.* instruction must be executed by all
// of them, with warpgroup-uniform control flow and operands.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr bool HAS_WGMMA = true;
// Shared-memory matrix descriptor of a K-major operand in the 128-B swizzle: rows
// of 64 bf16/f16 (128 B), 8-row groups 1024 B apart (SBO), the leading offset
// unused (1), swizzle mode 1 (128 B) in bits 62-63. The operand starts `offset`
// bytes past the shared address whose low word wgmma_desc_sw128_base made, inside
// a swizzle atom that begins on a 1024-B boundary (base offset 0); adding 32 B
// (= +2 in the descriptor) steps 16 k. The low word is made once per loop and each
// wgmma adds its offset with one 32-bit add: the operand lies in shared memory,
// below 2^18, so the 14-bit start field cannot carry into the fixed fields.
// Rebuilding the whole descriptor per wgmma cost 1.4-4 % at 24-104 tokens (H200;
// docs/design.md, section 8.3).
SK_DEVICE u32 wgmma_desc_sw128_base(u32 addr) { return ((addr & 0x3FFFFu) >> 4) | (1u << 16); }
SK_DEVICE u64 wgmma_desc_sw128(u32 base, u32 offset) {
  return (u64)(base + (offset >> 4)) | ((u64)(1024 >> 4) << 32) | (1ull << 62);
}
// Generic-proxy writes to shared memory (our cp.async copies) become visible to
// the async proxy that wgmma reads through.
SK_DEVICE void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
SK_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
SK_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int PENDING>
SK_DEVICE void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(PENDING) : "memory"); }
// Pins the accumulators in place around the asynchronous MMAs: without it the
// compiler may move register writes across wgmma.fence / wait_group.
template <int N>
SK_DEVICE void wgmma_fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

// D(64 x N, f32) += A(64 x 16, descriptor) . B(16 x N, descriptor), both K-major.
// Thread t of the warpgroup (warp w, lane l) holds D[16w + l/4 + 8((r>>1)&1)]
// [8(r>>2) + 2(l&3) + (r&1)] in d[r], r < N/2: the m16n8 layout per warp, repeated
// for each 8 columns.
template <typename T, int N>
struct Wgmma64;
#define SK_F4(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define SK_F8(d, i) SK_F4(d, i), SK_F4(d, i + 4)
// fp8: k32 per instruction over the same 32 bytes of each row (the k16 of 16-bit
// elements), with no transpose immediates (8-bit operands are K-major only).
#define SK_WGMMA_TYPE(T, SHAPE, TYPE, TAIL, N, REGS, ...)                                                   \
  template <>                                                                                             \
  struct Wgmma64<T, N> {                                                                                  \
    static SK_DEVICE void mma(float (&d)[N / 2], u64 a, u64 b) {                                          \
      asm volatile("wgmma.mma_async.sync.aligned.m64n" #N SHAPE ".f32." TYPE "." TYPE " " REGS TAIL ";"    \
                   : __VA_ARGS__                                                                          \
                   : "l"(a), "l"(b));                                                                     \
    }                                                                                                     \
  };
#define SK_WGMMA_SHAPE(N, REGS, ...)                                          \
  SK_WGMMA_TYPE(bf16_t, "k16", "bf16", ", 1, 1, 1, 0, 0", N, REGS, __VA_ARGS__) \
  SK_WGMMA_TYPE(f16_t, "k16", "f16", ", 1, 1, 1, 0, 0", N, REGS, __VA_ARGS__)   \
  SK_WGMMA_TYPE(e4m3_t, "k32", "e4m3", ", 1, 1, 1", N, REGS, __VA_ARGS__)
SK_WGMMA_SHAPE(16, "{%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9", SK_F8(d, 0))
SK_WGMMA_SHAPE(24, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11}, %12, %13", SK_F8(d, 0), SK_F4(d, 8))
SK_WGMMA_SHAPE(32, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17", SK_F8(d, 0), SK_F8(d, 8))
SK_WGMMA_SHAPE(48, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23}, %24, %25", SK_F8(d, 0), SK_F8(d, 8), SK_F8(d, 16))
SK_WGMMA_SHAPE(64, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33", SK_F8(d, 0), SK_F8(d, 8), SK_F8(d, 16), SK_F8(d, 24))
SK_WGMMA_SHAPE(72, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35}, %36, %37", SK_F8(d, 0), SK_F8(d, 8), SK_F8(d, 16), SK_F8(d, 24), SK_F4(d, 32))
SK_WGMMA_SHAPE(80, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39}, %40, %41", SK_F8(d, 0), SK_F8(d, 8), SK_F8(d, 16), SK_F8(d, 24), SK_F8(d, 32))
SK_WGMMA_SHAPE(88, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43}, %44, %45", SK_F8(d, 0), SK_F8(d, 8), SK_F8(d, 16), SK_F8(d, 24), SK_F8(d, 32), SK_F4(d, 40))
SK_WGMMA_SHAPE(96, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47}, %48, %49", SK_F8(d, 0), SK_F8(d, 8), SK_F8(d, 16), SK_F8(d, 24), SK_F8(d, 32), SK_F8(d, 40))
SK_WGMMA_SHAPE(104, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51}, %52, %53", SK_F8(d, 0), SK_F8(d, 8), SK_F8(d, 16), SK_F8(d, 24), SK_F8(d, 32), SK_F8(d, 40), SK_F4(d, 48))
SK_WGMMA_SHAPE(112, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55}, %56, %57", SK_F8(d, 0), SK_F8(d, 8), SK_F8(d, 16), SK_F8(d, 24), SK_F8(d, 32), SK_F8(d, 40), SK_F8(d, 48))
SK_WGMMA_SHAPE(120, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59}, %60, %61", SK_F8(d, 0), SK_F8(d, 8), SK_F8(d, 16), SK_F8(d, 24), SK_F8(d, 32), SK_F8(d, 40), SK_F8(d, 48), SK_F4(d, 56))
SK_WGMMA_SHAPE(128, "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65", SK_F8(d, 0), SK_F8(d, 8), SK_F8(d, 16), SK_F8(d, 24), SK_F8(d, 32), SK_F8(d, 40), SK_F8(d, 48), SK_F8(d, 56))
#undef SK_WGMMA_SHAPE
#undef SK_WGMMA_TYPE
#undef SK_F8
#undef SK_F4

// ---- tensor memory accelerator (sm_90) ----
// A CUtensorMap encoded on the host (TensorMap, gemm_params.h), passed by value as a
// __grid_constant__ kernel parameter so its address is a param-space address the
// TMA unit reads (never a local copy).
#define SK_GRID_CONSTANT __attribute__((grid_constant))
SK_DEVICE void tensormap_prefetch(const TensorMap* m) { asm volatile("prefetch.tensormap [%0];" :: "l"(m) : "memory"); }
// L2 policy for a tensor load: weights are streamed once, activations re-read by
// every weight tile.
SK_DEVICE u64 l2_evict_first() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
SK_DEVICE u64 l2_evict_last() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
// Copies the box at element coordinates (c0 = inner, c1 = rows) of `map` into
// shared memory at `dst` (laid out and swizzled as the map says; rows and columns
// outside the tensor are zero-filled and still counted) and completes its bytes on `bar`.
SK_DEVICE void tma_load_2d(void* dst, const TensorMap* map, int c0, int c1, u64* bar, u64 policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;"
      :: "r"(smem_addr(dst)), "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar)), "l"(policy) : "memory");
}
#else
constexpr bool HAS_WGMMA = false;
#endif
