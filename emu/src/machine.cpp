// The wave-level machine: lanes as fibers, waves executing wave-collective
// instructions in lockstep, workgroups with LDS and barriers, a grid dispatched
// x-fastest into a few resident workgroup slots, direct-to-LDS copies that land
// lazily, and a non-coherent per-workgroup cache for split-K partials.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>

#include "emu.h"
#include "fiber.h"

#ifndef SKEMU_B_MAP
#define SKEMU_B_MAP 0
#endif
namespace emu {

std::vector<ArchTable>& registry() {
  static std::vector<ArchTable> r;
  return r;
}

std::vector<ProbeEvent>& probe_log() {
  static thread_local std::vector<ProbeEvent> log;
  return log;
}

const char* mutation_name(Mutation m) {
  switch (m) {
    case Mutation::None: return "none";
    case Mutation::SwapALanes: return "swap-A-lanes-5-21";
    case Mutation::AWrongKHalf: return "A-wrong-k-half";
    case Mutation::BKGroupReversed: return "B-k-groups-reversed";
    case Mutation::DTransposed: return "D-transposed";
  }
  return "?";
}

const char* lds_class_name(int c) {
  static const char* n[LDS_CLASSES] = {"ds_read W", "ds_read X", "ds_read other", "copy W", "copy X", "copy other"};
  return n[c];
}

namespace {

enum Op { OP_NONE, OP_EXIT, OP_BARRIER, OP_DS_READ, OP_COPY, OP_WAIT, OP_MFMA, OP_SMFMAC };
const char* op_name(int op) {
  static const char* n[] = {"none", "exit", "s_barrier", "ds_read_b128", "global_load_lds", "s_waitcnt vmcnt", "v_mfma", "v_smfmac"};
  return n[op];
}

struct Wave;
struct WG;

struct Lane {
  Fiber fiber;
  Wave* wave = nullptr;
  int tid = 0, lane = 0;
  bool exited = false;
  int op = OP_NONE;
  void* ra = nullptr;
  const void* src = nullptr;
  char* base = nullptr;
  int imm = 0, dtype = 0;
  const uint32_t* a = nullptr;
  const uint32_t* b = nullptr;
  const float* c = nullptr;
  float* d = nullptr;
  uint32_t idx = 0;
  alignas(16) unsigned char data[16];
};

struct CopyRec {
  int wave = 0;
  uint32_t issue_gen = 0, cover_gen = 0;
  bool covered = false, landed = false;
  int size = 0, lds_off = 0;
  uint64_t active = 0;
  unsigned char data[64 * 16];
};

// Per LDS dword: the last copy that targets it, and who read it in which barrier interval.
struct Shadow {
  int32_t copy = -1;
  uint32_t read_gen = ~0u;
  uint32_t read_mask = 0;
};

struct Wave {
  int id = 0;
  WG* wg = nullptr;
  Lane* lanes = nullptr;
  enum State { Ready, AtBarrier, Done } state = Ready;
  std::deque<int> fifo;  // copies not yet covered by a wait, oldest first
};

struct Line {
  unsigned char data[16];
  bool dirty;
};

struct WG {
  int slot = 0, bx = 0, by = 0, dispatch = 0;
  int nwaves = 0, live_waves = 0, at_barrier = 0;
  uint32_t gen = 0;
  char* lds = nullptr;
  int lds_bytes = 0;
  Wave waves[16];
  std::deque<CopyRec> copies;
  std::vector<Shadow> shadow;
  std::unordered_map<uintptr_t, Line> cache;
  bool acquired = false;
  bool busy = false;
  alignas(16) unsigned char params[256];
};

struct Slot {
  std::vector<Lane> lanes;
  char* stacks = nullptr;
  size_t stacks_len = 0;
  char* lds_map = nullptr;
  size_t lds_map_len = 0;
  char* lds_end = nullptr;  // first byte of the guard page
  WG wg;
};

constexpr size_t STACK = 64 << 10;

struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return (next() >> 11) * (1.0 / 9007199254740992.0); }
};

struct Machine;
thread_local Machine* t_machine = nullptr;
thread_local Lane* t_lane = nullptr;

void lane_entry();

struct Machine {
  Fiber sched;
  std::vector<std::unique_ptr<Slot>> slots;
  // the launch
  const KernelInfo* k = nullptr;
  const std::vector<Region>* regions = nullptr;
  const Region* partials = nullptr;
  std::vector<unsigned char> snapshot;  // partials at launch start (what stale lines hold)
  std::vector<std::pair<uintptr_t, Line>> orphans;
  LaunchOptions opt;
  Rng rng{1};
  LaunchResult* res = nullptr;
  std::map<std::string, int> error_kinds;
  bool abort = false;
  const ArchInfo* ai = nullptr;
  size_t params_bytes = 0;
  const void* params = nullptr;

  ~Machine() {
    for (auto& s : slots) {
      if (s->stacks) munmap(s->stacks, s->stacks_len);
      if (s->lds_map) munmap(s->lds_map, s->lds_map_len);
    }
  }

  void error(const char* kind, const std::string& msg, bool fatal = false) {
    res->error_count++;
    int& n = error_kinds[kind];
    if (n++ < 3 && res->errors.size() < 24) res->errors.push_back(std::string(kind) + ": " + msg);
    if (fatal) abort = true;
  }

  Slot& slot(int i, int lanes) {
    while ((int)slots.size() <= i) slots.emplace_back(new Slot);
    Slot& s = *slots[i];
    if ((int)s.lanes.size() < lanes) {
      if (s.stacks) munmap(s.stacks, s.stacks_len);
      const size_t page = (size_t)sysconf(_SC_PAGESIZE);
      s.stacks_len = (size_t)lanes * STACK;
      s.stacks = (char*)mmap(nullptr, s.stacks_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                             -1, 0);
      if (s.stacks == MAP_FAILED) {
        std::perror("mmap stacks");
        std::abort();
      }
      for (int l = 0; l < lanes; ++l) mprotect(s.stacks + (size_t)l * STACK, page, PROT_NONE);  // overflow guard
      s.lanes = std::vector<Lane>(lanes);
    }
    if (!s.lds_map) {
      const size_t page = (size_t)sysconf(_SC_PAGESIZE);
      const size_t cap = 160 << 10;
      s.lds_map_len = cap + page;
      s.lds_map = (char*)mmap(nullptr, s.lds_map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      s.lds_end = s.lds_map + cap;
      mprotect(s.lds_end, page, PROT_NONE);  // an access past the LDS faults
    }
    return s;
  }

  const Region* find(const void* p, size_t n) const {
    for (const Region& r : *regions) {
      const char* b = (const char*)r.base;
      if ((const char*)p >= b && (const char*)p + n <= b + r.bytes) return &r;
    }
    return nullptr;
  }

  // ---- workgroups ----
  void start(int si, int dispatch, int gx) {
    Slot& s = *slots[si];
    WG& g = s.wg;
    g.slot = si;
    g.dispatch = dispatch;
    g.bx = dispatch % gx;
    g.by = dispatch / gx;
    g.nwaves = k->cfg.waves();
    g.live_waves = g.nwaves;
    g.at_barrier = 0;
    g.gen = 0;
    g.lds_bytes = k->lds_bytes;
    g.lds = s.lds_end - ((k->lds_bytes + 15) & ~15);
    std::memset(g.lds, 0xff, (size_t)((k->lds_bytes + 15) & ~15));  // uninitialised LDS: NaN patterns
    g.copies.clear();
    g.shadow.assign((size_t)(k->lds_bytes + 3) / 4, Shadow{});
    g.cache.clear();
    g.acquired = false;
    g.busy = true;
    std::memcpy(g.params, params, params_bytes);
    for (int w = 0; w < g.nwaves; ++w) {
      Wave& wv = g.waves[w];
      wv.id = w;
      wv.wg = &g;
      wv.lanes = &s.lanes[(size_t)w * 64];
      wv.state = Wave::Ready;
      wv.fifo.clear();
      for (int l = 0; l < 64; ++l) {
        Lane& L = wv.lanes[l];
        L.wave = &wv;
        L.tid = w * 64 + l;
        L.lane = l;
        L.exited = false;
        L.op = OP_NONE;
        const int idx = w * 64 + l;
        fiber_init(L.fiber, s.stacks + (size_t)idx * STACK, STACK, lane_entry);
      }
    }
    res->workgroups++;
  }

  void finish(WG& g) {
    for (auto& kv : g.cache)
      if (kv.second.dirty) orphans.push_back(kv);  // still only in this workgroup's cache
    g.cache.clear();
    g.busy = false;
  }

  void resume(Lane* L) {
    t_lane = L;
    fiber_switch(sched, L->fiber);
    t_lane = nullptr;
  }

  void land(WG& g, CopyRec& r) {
    if (r.landed) return;
    for (int l = 0; l < 64; ++l)
      if ((r.active >> l) & 1) std::memcpy(g.lds + r.lds_off + l * r.size, r.data + l * r.size, (size_t)r.size);
    r.landed = true;
  }

  void maybe_land(Wave& w) {
    WG& g = *w.wg;
    while (rng.uniform() < opt.land_prob) {
      bool any = false;
      for (int idx : w.fifo) {
        CopyRec& r = g.copies[(size_t)idx];
        if (!r.landed) {
          land(g, r);
          any = true;
          break;
        }
      }
      if (!any) break;
    }
  }

  void try_release(WG& g) {
    if (g.at_barrier > 0 && g.at_barrier == g.live_waves) {
      g.gen++;
      g.at_barrier = 0;
        for (int w = 0; w < g.nwaves; ++w)
        if (g.waves[w].state == Wave::AtBarrier) g.waves[w].state = Wave::Ready;
      res->barriers++;
    }
  }

  int lds_class(int off, bool copy) const {
    const int w = k->cfg.w_ring_bytes(), x = k->cfg.x_ring_bytes();
    int c = off < w ? 0 : off < w + x ? 1 : 2;
    return (copy ? COPY_W : READ_W) + c;
  }

  void step(Wave& w) {
    WG& g = *w.wg;
    for (int l = 0; l < 64; ++l)
      if (!w.lanes[l].exited) {
        w.lanes[l].op = OP_NONE;
        resume(&w.lanes[l]);
      }
    res->wave_steps++;
    int op = -1, active = 0;
    void* ra = nullptr;
    uint64_t act = 0;
    for (int l = 0; l < 64; ++l) {
      Lane& L = w.lanes[l];
      if (L.exited) continue;
      ++active;
      act |= 1ull << l;
      if (op < 0) {
        op = L.op;
        ra = L.ra;
      } else if (L.op != op || L.ra != ra) {
        char m[200];
        std::snprintf(m, sizeof m, "wg (%d,%d) wave %d: lane %d at %s (%p), lane 0.. at %s (%p)", g.bx, g.by, w.id, l,
                      op_name(L.op), L.ra, op_name(op), ra);
        error("divergent-wave-op", m, true);
        return;
      }
    }
    if (active == 0) {
      w.state = Wave::Done;
      g.live_waves--;
      int uncovered = 0;
      for (int idx : w.fifo) {
        land(g, g.copies[(size_t)idx]);
        ++uncovered;
      }
      w.fifo.clear();
      if (uncovered) {
        char m[160];
        std::snprintf(m, sizeof m, "wg (%d,%d) wave %d ended with %d direct-to-LDS copies no s_waitcnt covered", g.bx,
                      g.by, w.id, uncovered);
        error("copies-outstanding-at-exit", m);
      }
      try_release(g);
      return;
    }
    switch (op) {
      case OP_BARRIER: exec_barrier(w); break;
      case OP_DS_READ: exec_ds_read(w, act); break;
      case OP_COPY: exec_copy(w, act); break;
      case OP_WAIT: exec_wait(w); break;
      case OP_MFMA: exec_mfma(w, act); break;
      case OP_SMFMAC: exec_smfmac(w, act); break;
      default: error("internal", "unknown op", true); return;
    }
    maybe_land(w);
  }

  // s_barrier counts waves, not instructions: waves may meet at different
  // s_barrier instructions (the compiler may duplicate one into both sides of a
  // wave-uniform branch), so only arrival counts matter here.
  void exec_barrier(Wave& w) {
    WG& g = *w.wg;
    w.state = Wave::AtBarrier;
    g.at_barrier++;
    try_release(g);
  }

  void exec_ds_read(Wave& w, uint64_t act) {
    WG& g = *w.wg;
    res->ds_reads++;
    uint32_t addr[64] = {0};
    int first = -1;
    for (int l = 0; l < 64; ++l) {
      if (!((act >> l) & 1)) continue;
      Lane& L = w.lanes[l];
      const long off = (const char*)L.src - g.lds;
      if (off < 0 || off + 16 > g.lds_bytes || off % 16 != 0) {
        char m[160];
        std::snprintf(m, sizeof m, "wg (%d,%d) wave %d lane %d: ds_read_b128 at LDS offset %ld (size %d)", g.bx, g.by,
                      w.id, l, off, g.lds_bytes);
        error("lds-out-of-bounds", m);
        std::memset(L.data, 0, 16);
        act &= ~(1ull << l);
        continue;
      }
      if (first < 0) first = (int)off;
      addr[l] = (uint32_t)off;
      for (int q = 0; q < 4; ++q) {
        Shadow& sh = g.shadow[(size_t)off / 4 + q];
        if (sh.copy >= 0) {
          const CopyRec& r = g.copies[(size_t)sh.copy];
          // A read of data its copy has not made safe to read yet: "<by> <wave> <why>".
          auto early = [&](const char* kind, const char* by, const char* why) {
            char m[200];
            std::snprintf(m, sizeof m, "wg (%d,%d) wave %d lane %d reads LDS %ld, %s %d %s", g.bx, g.by, w.id, l,
                          off + 4 * q, by, r.wave, why);
            error(kind, m);
          };
          if (!r.covered)
            early("read-before-copy-wait", "written by a copy of wave", "that no s_waitcnt vmcnt has covered yet");
          else if (r.wave != w.id && r.cover_gen >= g.gen)
            early("read-before-barrier", "copied by wave", "whose wait is not followed by a barrier yet");
        }
        if (sh.read_gen != g.gen) {
          sh.read_gen = g.gen;
          sh.read_mask = 0;
        }
        sh.read_mask |= 1u << w.id;
      }
      std::memcpy(L.data, g.lds + off, 16);
    }
    if (first >= 0) res->bank[lds_class(first, false)].add(lds_bank_cycles(addr, act, 16, ai->banks));
  }

  void exec_copy(Wave& w, uint64_t act) {
    WG& g = *w.wg;
    res->copies++;
    int l0 = -1;
    for (int l = 0; l < 64; ++l)
      if ((act >> l) & 1) {
        l0 = l;
        break;
      }
    char* base = w.lanes[l0].base;
    const int size = w.lanes[l0].imm;
    for (int l = 0; l < 64; ++l)
      if (((act >> l) & 1) && (w.lanes[l].base != base || w.lanes[l].imm != size)) {
        error("copy-nonuniform-base", "global_load_lds with a lane-varying LDS base (M0) or size", true);
        return;
      }
    if (size != ai->copy_bytes) {
      char m[120];
      std::snprintf(m, sizeof m, "global_load_lds of %d bytes per lane on %s (expected %d)", size, ai->name,
                    ai->copy_bytes);
      error("copy-size", m);
    }
    const long base_off = base - g.lds;
    g.copies.emplace_back();
    const int idx = (int)g.copies.size() - 1;
    CopyRec& r = g.copies.back();
    r.wave = w.id;
    r.issue_gen = g.gen;
    r.size = size;
    r.lds_off = (int)base_off;
    r.active = 0;
    uint32_t addr[64] = {0};
    for (int l = 0; l < 64; ++l) {
      if (!((act >> l) & 1)) continue;
      Lane& L = w.lanes[l];
      const long dst = base_off + (long)l * size;
      if (dst < 0 || dst + size > g.lds_bytes || size > 16) {
        char m[160];
        std::snprintf(m, sizeof m, "wg (%d,%d) wave %d lane %d: global_load_lds writes LDS offset %ld (size %d)", g.bx,
                      g.by, w.id, l, dst, g.lds_bytes);
        error("lds-out-of-bounds", m);
        continue;
      }
      const Region* reg = find(L.src, (size_t)size);
      if (!reg || (reg->kind != Region::ReadOnly && reg->kind != Region::Output)) {
        char m[160];
        std::snprintf(m, sizeof m, "wg (%d,%d) wave %d lane %d: global_load_lds reads %p, outside the inputs", g.bx,
                      g.by, w.id, l, L.src);
        error("global-out-of-bounds", m);
        std::memset(r.data + l * size, 0, (size_t)size);
      } else {
        std::memcpy(r.data + l * size, L.src, (size_t)size);
      }
      r.active |= 1ull << l;
      addr[l] = (uint32_t)dst;
      for (int q = 0; q < (size + 3) / 4; ++q) {
        Shadow& sh = g.shadow[(size_t)dst / 4 + q];
        if (sh.read_gen == g.gen && (sh.read_mask & ~(1u << w.id))) {
          char m[200];
          std::snprintf(m, sizeof m,
                        "wg (%d,%d) wave %d: copy overwrites LDS %ld that another wave read in the same barrier "
                        "interval",
                        g.bx, g.by, w.id, dst + 4 * q);
          error("copy-overwrites-live-data", m);
        }
        if (sh.copy >= 0) {
          const CopyRec& p = g.copies[(size_t)sh.copy];
          if (p.wave != w.id && !(p.covered && p.cover_gen < g.gen)) {
            char m[200];
            std::snprintf(m, sizeof m, "wg (%d,%d) wave %d: copy to LDS %ld races with a pending copy of wave %d",
                          g.bx, g.by, w.id, dst + 4 * q, p.wave);
            error("copy-copy-race", m);
          }
        }
        sh.copy = idx;
      }
    }
    w.fifo.push_back(idx);
    if (r.active) res->bank[lds_class((int)base_off, true)].add(lds_bank_cycles(addr, r.active, size, ai->banks));
    // vmcnt is 6 bits: with 63 outstanding, issue stalls until the oldest returns.
    int unlanded = 0;
    for (int i : w.fifo) unlanded += !g.copies[(size_t)i].landed;
    if (unlanded > 63)
      for (int i : w.fifo)
        if (!g.copies[(size_t)i].landed) {
          land(g, g.copies[(size_t)i]);
          break;
        }
  }

  void exec_wait(Wave& w) {
    WG& g = *w.wg;
    int n = -1;
    for (int l = 0; l < 64; ++l) {
      if (w.lanes[l].exited) continue;
      if (n < 0) n = w.lanes[l].imm;
      else if (w.lanes[l].imm != n) {
        error("wait-nonuniform", "s_waitcnt with a lane-varying count", true);
        return;
      }
    }
    // Guaranteed by vmcnt(n): every copy but the n newest has completed.
    while ((int)w.fifo.size() > n) {
      CopyRec& r = g.copies[(size_t)w.fifo.front()];
      land(g, r);
      r.covered = true;
      r.cover_gen = g.gen;
      w.fifo.pop_front();
    }
  }

  void exec_mfma(Wave& w, uint64_t act) {
    res->mfma++;
    if (act != ~0ull) {
      error("mfma-partial-exec", "v_mfma with lanes that have exited", true);
      return;
    }
    const int kk = w.lanes[0].imm, dt = w.lanes[0].dtype, nv = mfma_vgprs(kk, dt);
    for (int l = 1; l < 64; ++l)
      if (w.lanes[l].imm != kk || w.lanes[l].dtype != dt) {
        error("mfma-nonuniform", "lanes disagree on the MFMA variant", true);
        return;
      }
    uint32_t A[64 * 4], B[64 * 4];
    float C[64 * 4], D[64 * 4];
    for (int l = 0; l < 64; ++l) {
      std::memcpy(A + l * nv, w.lanes[l].a, (size_t)nv * 4);
      std::memcpy(B + l * nv, w.lanes[l].b, (size_t)nv * 4);
      std::memcpy(C + l * 4, w.lanes[l].c, 16);
    }
    v_mfma_f32_16x16xk(kk, dt, A, B, C, D, opt.mutation);
    for (int l = 0; l < 64; ++l) std::memcpy(w.lanes[l].d, D + l * 4, 16);
  }

  void exec_smfmac(Wave& w, uint64_t act) {
    res->mfma++;
    if (act != ~0ull) {
      error("mfma-partial-exec", "v_smfmac with lanes that have exited", true);
      return;
    }
    const int kk = w.lanes[0].imm, dt = w.lanes[0].dtype, na = kk * elem_bytes(dt) / 32, nb = 2 * na;
    uint32_t A[64 * 4], B[64 * 8], I[64];
    float C[64 * 4], D[64 * 4];
    for (int l = 0; l < 64; ++l) {
      std::memcpy(A + l * na, w.lanes[l].a, (size_t)na * 4);
      std::memcpy(B + l * nb, w.lanes[l].b, (size_t)nb * 4);
      std::memcpy(C + l * 4, w.lanes[l].c, 16);
      I[l] = w.lanes[l].idx;
    }
    if (!v_smfmac_f32_16x16xk(kk, dt, SKEMU_B_MAP, A, B, I, C, D)) error("smfmac-index", "invalid sparse index", true);
    for (int l = 0; l < 64; ++l) std::memcpy(w.lanes[l].d, D + l * 4, 16);
  }

  // ---- global memory ----
  void writeback(WG& g) {
    for (auto& kv : g.cache)
      if (kv.second.dirty) {
        std::memcpy((void*)kv.first, kv.second.data, 16);
        kv.second.dirty = false;
      }
  }
  void invalidate(WG& g) {
    for (auto it = g.cache.begin(); it != g.cache.end();)
      if (!it->second.dirty) it = g.cache.erase(it);
      else ++it;
    g.acquired = true;
  }

  void load16(Lane* L, const void* p, void* out) {
    const Region* r = find(p, 16);
    if (!r || ((uintptr_t)p & 15)) {
      char m[120];
      std::snprintf(m, sizeof m, "16-byte global load at %p: %s", p, r ? "misaligned" : "outside every buffer");
      error("global-out-of-bounds", m);
      std::memset(out, 0, 16);
      return;
    }
    if (r->kind != Region::Partials) {
      std::memcpy(out, p, 16);
      return;
    }
    WG& g = *L->wave->wg;
    auto it = g.cache.find((uintptr_t)p);
    if (it == g.cache.end()) {
      Line ln;
      // Until this workgroup acquires, a miss may be served by a stale line: the
      // value the buffer had when the launch began.
      const void* src = g.acquired ? p : (const void*)(snapshot.data() + ((const char*)p - (const char*)r->base));
      std::memcpy(ln.data, src, 16);
      ln.dirty = false;
      it = g.cache.emplace((uintptr_t)p, ln).first;
    }
    std::memcpy(out, it->second.data, 16);
  }

  void store16(Lane* L, void* p, const void* v) {
    const Region* r = find(p, 16);
    if (!r || ((uintptr_t)p & 15) || (r->kind != Region::Partials && r->kind != Region::Output)) {
      char m[120];
      std::snprintf(m, sizeof m, "16-byte global store at %p: outside the writable buffers or misaligned", p);
      error("global-out-of-bounds", m);
      return;
    }
    if (r->kind != Region::Partials) {
      std::memcpy(p, v, 16);
      return;
    }
    Line ln;
    std::memcpy(ln.data, v, 16);
    ln.dirty = true;
    L->wave->wg->cache[(uintptr_t)p] = ln;
  }

  const Region* counter_region(const void* p) {
    const Region* r = find(p, 4);
    if (!r || r->kind != Region::Counters || ((uintptr_t)p & 3)) {
      error("atomic-out-of-bounds", "agent-scope atomic outside the counters buffer");
      return nullptr;
    }
    return r;
  }

  LaunchResult run(const KernelInfo& kern, const void* prm, size_t prm_bytes, int gx, int gy,
                   const std::vector<Region>& regs, const LaunchOptions& o) {
    LaunchResult result;
    res = &result;
    k = &kern;
    regions = &regs;
    opt = o;
    rng = Rng{o.seed * 0x2545F4914F6CDD1Dull + 7};
    error_kinds.clear();
    abort = false;
    ai = &arch_info(kern.arch);
    params = prm;
    params_bytes = prm_bytes;
    orphans.clear();
    partials = nullptr;
    snapshot.clear();
    for (const Region& r : regs)
      if (r.kind == Region::Partials) {
        partials = &r;
        snapshot.assign((const unsigned char*)r.base, (const unsigned char*)r.base + r.bytes);
      }
    if (prm_bytes > sizeof(WG::params) || kern.cfg.waves() > 16 || kern.lds_bytes > ai->lds_limit) {
      error("launch", "bad launch: params, waves or LDS over the limits", true);
      return result;
    }
    const int resident =
        o.resident > 0 ? o.resident : 1 + (int)(rng.next() % (uint64_t)(o.max_resident < 1 ? 1 : o.max_resident));
    result.resident = resident;
    for (int i = 0; i < resident; ++i) slot(i, kern.cfg.threads());

    Machine* prev = t_machine;
    t_machine = this;
    const int total = gx * gy;
    int next = 0;
    std::vector<Wave*> ready;
    while (!abort) {
      for (int i = 0; i < resident && next < total; ++i)
        if (!slots[i]->wg.busy) start(i, next++, gx);
      ready.clear();
      bool any_busy = false;
      for (int i = 0; i < resident; ++i) {
        WG& g = slots[i]->wg;
        if (!g.busy) continue;
        any_busy = true;
        for (int w = 0; w < g.nwaves; ++w)
          if (g.waves[w].state == Wave::Ready) ready.push_back(&g.waves[w]);
      }
      if (!any_busy) break;
      if (ready.empty()) {
        error("deadlock", "no wave can make progress (a barrier that not every live wave reaches)", true);
        break;
      }
      if (o.arrival != 0) {  // only the waves of the workgroups with the lowest / highest y
        int best = o.arrival == 1 ? 1 << 30 : -1;
        for (Wave* w : ready) best = o.arrival == 1 ? std::min(best, w->wg->by) : std::max(best, w->wg->by);
        size_t n = 0;
        for (Wave* w : ready)
          if (w->wg->by == best) ready[n++] = w;
        ready.resize(n);
      }
      Wave* w = ready[rng.next() % ready.size()];
      step(*w);
      if (w->wg->live_waves == 0) finish(*w->wg);
    }
    // Kernel end: every cache writes back (system-scope release at the end of a kernel).
    for (auto& kv : orphans) std::memcpy((void*)kv.first, kv.second.data, 16);
    for (int i = 0; i < resident; ++i) {
      WG& g = slots[i]->wg;
      if (g.busy) {
        writeback(g);
        g.cache.clear();
        g.busy = false;  // aborted launch: its fibers are abandoned
      }
    }
    t_machine = prev;
    res = nullptr;
    return result;
  }
};

void lane_entry() {
  Lane* L = t_lane;
  WG* g = L->wave->wg;
  t_machine->k->fn(g->params);
  L = t_lane;
  L->exited = true;
  L->op = OP_EXIT;
  fiber_switch(L->fiber, t_machine->sched);
  __builtin_trap();  // never resumed
}

inline void wave_op(Lane* L, int op, void* ra) {
  L->op = op;
  L->ra = ra;
  fiber_switch(L->fiber, t_machine->sched);
}

alignas(16) char probe_lds[1 << 16];

const char* mfma_intrinsic(int k, int dtype) {
  if (is_fp8(dtype)) return "mfma.f32.16x16x32.fp8.fp8";
  if (k == 16) return dtype == 0 ? "mfma.f32.16x16x16bf16.1k" : "mfma.f32.16x16x16f16";
  return dtype == 0 ? "mfma.f32.16x16x32.bf16" : "mfma.f32.16x16x32.f16";
}

struct ProbeState {
  std::vector<const float*> outs;  // d pointer of each recorded event
};
thread_local ProbeState t_probe;

void probe_mfma(int k, int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  auto& log = probe_log();
  t_probe.outs.resize(log.size(), nullptr);
  ProbeEvent e;
  e.instr = mfma_intrinsic(k, dtype);
  for (int v = 0; v < mfma_vgprs(k, dtype); ++v) {  // as 16-bit halves, as the IR parser reads them
    e.a.push_back((int)(a[v] & 0xffff));
    e.a.push_back((int)(a[v] >> 16));
    e.b.push_back((int)(b[v] & 0xffff));
    e.b.push_back((int)(b[v] >> 16));
  }
  e.c_from = -1;
  for (int i = (int)t_probe.outs.size() - 1; i >= 0; --i)
    if (t_probe.outs[(size_t)i] == c) {
      e.c_from = i;
      break;
    }
  log.push_back(e);
  t_probe.outs.push_back(d);
}

void probe_simple(const char* instr, int imm) {
  ProbeEvent e;
  e.instr = instr;
  e.imm = imm;
  t_probe.outs.resize(probe_log().size(), nullptr);
  probe_log().push_back(e);
  t_probe.outs.push_back(nullptr);
}

}  // namespace

LaunchResult launch(const KernelInfo& k, const void* params, size_t params_bytes, int grid_x, int grid_y,
                    const std::vector<Region>& regions, const LaunchOptions& opt) {
  static thread_local Machine m;
  return m.run(k, params, params_bytes, grid_x, grid_y, regions, opt);
}

}  // namespace emu

using emu::Lane;
using emu::t_lane;
using emu::t_machine;

extern "C" {

int sk_emu_workitem_id_x() { return t_lane ? t_lane->tid : 0; }
int sk_emu_workgroup_id_x() { return t_lane ? t_lane->wave->wg->bx : 0; }
int sk_emu_workgroup_id_y() { return t_lane ? t_lane->wave->wg->by : 0; }

char* sk_emu_lds(int bytes) {
  Lane* L = t_lane;
  if (!L) return emu::probe_lds;
  emu::WG& g = *L->wave->wg;
  if (bytes != g.lds_bytes) {
    char m[120];
    std::snprintf(m, sizeof m, "kernel declares %d bytes of LDS, the registry says %d", bytes, g.lds_bytes);
    t_machine->error("lds-size", m, true);
  }
  return g.lds;
}

void sk_emu_s_barrier() {
  Lane* L = t_lane;
  if (!L) return emu::probe_simple("s.barrier", 0);
  emu::wave_op(L, emu::OP_BARRIER, __builtin_return_address(0));
}

void sk_emu_ds_read_b128(const char* p, void* out) {
  Lane* L = t_lane;
  if (!L) {
    std::memset(out, 0, 16);
    return;
  }
  L->src = p;
  emu::wave_op(L, emu::OP_DS_READ, __builtin_return_address(0));
  std::memcpy(out, L->data, 16);
}

void sk_emu_global_load_lds(const void* src, char* base, int size) {
  Lane* L = t_lane;
  if (!L) return emu::probe_simple("global.load.lds", size);
  L->src = src;
  L->base = base;
  L->imm = size;
  emu::wave_op(L, emu::OP_COPY, __builtin_return_address(0));
}

void sk_emu_s_waitcnt_vmcnt(int n) {
  Lane* L = t_lane;
  if (!L) return emu::probe_simple("s.waitcnt.vmcnt", n);
  L->imm = n;
  emu::wave_op(L, emu::OP_WAIT, __builtin_return_address(0));
}

void sk_emu_global_load_b128(const void* p, void* out) {
  Lane* L = t_lane;
  if (!L) {
    std::memcpy(out, p, 16);
    return;
  }
  t_machine->load16(L, p, out);
}

void sk_emu_global_store_b128(void* p, const void* v) {
  Lane* L = t_lane;
  if (!L) {
    std::memcpy(p, v, 16);
    return;
  }
  t_machine->store16(L, p, v);
}

// Agent-scope orderings (LLVM AMDGPUUsage, "Memory Model GFX942",
// https://llvm.org/docs/AMDGPUUsage.html#memory-model-gfx942): release = buffer_wbl2
// sc1 (+ waits), acquire = buffer_inv sc1; both act on the cache, not on one
// thread's accesses.
void sk_emu_fence_agent(int order) {
  Lane* L = t_lane;
  if (!L) return emu::probe_simple(order == __ATOMIC_RELEASE ? "fence.release.agent" : "fence.acquire.agent", 0);
  // (acq_rel / seq_cst fences do not occur in the prelude; they would act as both.)
  emu::WG& g = *L->wave->wg;
  if (order == __ATOMIC_RELEASE || order == __ATOMIC_ACQ_REL || order == __ATOMIC_SEQ_CST) t_machine->writeback(g);
  if (order == __ATOMIC_ACQUIRE || order == __ATOMIC_ACQ_REL || order == __ATOMIC_SEQ_CST) t_machine->invalidate(g);
}

uint32_t sk_emu_atomic_add_agent(uint32_t* p, uint32_t v, int order) {
  Lane* L = t_lane;
  if (!L) {
    emu::probe_simple("atomic.add.agent", order);
    return 0;  // probe mode: the first and only arriver
  }
  const emu::Region* r = t_machine->counter_region(p);
  if (!r) return 0;
  emu::WG& g = *L->wave->wg;
  if (order == __ATOMIC_RELEASE || order == __ATOMIC_ACQ_REL || order == __ATOMIC_SEQ_CST) t_machine->writeback(g);
  const uint32_t old = *p;  // RMW atomics execute at the coherence point (L2 / memory)
  *p = old + v;
  t_machine->res->arrivals.emplace_back((size_t)(p - (const uint32_t*)r->base), g.by);
  if (order == __ATOMIC_ACQUIRE || order == __ATOMIC_ACQ_REL || order == __ATOMIC_SEQ_CST) t_machine->invalidate(g);
  return old;
}

void sk_emu_atomic_store_agent(uint32_t* p, uint32_t v, int order) {
  Lane* L = t_lane;
  if (!L) return emu::probe_simple("atomic.store.agent", order);
  if (!t_machine->counter_region(p)) return;
  if (order == __ATOMIC_RELEASE || order == __ATOMIC_SEQ_CST) t_machine->writeback(*L->wave->wg);
  *p = v;
}

// Every matrix instruction is one wave-collective op: the shape's K, the operands
// and (SMFMAC) the sparse index go to the wave, which executes it for all lanes.
static void matrix_op(emu::Op op, int k, int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c, uint32_t idx,
                      void* ra) {
  Lane* L = t_lane;
  L->imm = k;
  L->dtype = dtype;
  L->a = a;
  L->b = b;
  L->c = c;
  L->d = d;
  L->idx = idx;
  emu::wave_op(L, op, ra);
}

static void mfma_hook(int k, int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c, void* ra) {
  if (!t_lane) return emu::probe_mfma(k, dtype, d, a, b, c);
  matrix_op(emu::OP_MFMA, k, dtype, d, a, b, c, 0, ra);
}

void sk_emu_v_mfma_f32_16x16x16(int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  mfma_hook(16, dtype, d, a, b, c, __builtin_return_address(0));
}

void sk_emu_v_mfma_f32_16x16x32(int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  mfma_hook(32, dtype, d, a, b, c, __builtin_return_address(0));
}

void sk_emu_v_mfma_f32_16x16x32_fp8_fp8(int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  mfma_hook(32, dtype, d, a, b, c, __builtin_return_address(0));
}

static void smfmac_hook(int k, int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c, uint32_t idx, void* ra) {
  if (!t_lane) std::abort();  // the parity probes compile no sparse atom
  matrix_op(emu::OP_SMFMAC, k, dtype, d, a, b, c, idx, ra);
}
void sk_emu_v_smfmac_f32_16x16x32(int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c, uint32_t idx) {
  smfmac_hook(32, dtype, d, a, b, c, idx, __builtin_return_address(0));
}
void sk_emu_v_smfmac_f32_16x16x64(int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c, uint32_t idx) {
  smfmac_hook(64, dtype, d, a, b, c, idx, __builtin_return_address(0));
}
void sk_emu_v_smfmac_f32_16x16x64_fp8_fp8(int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c, uint32_t idx) {
  smfmac_hook(64, dtype, d, a, b, c, idx, __builtin_return_address(0));
}
void sk_emu_v_smfmac_f32_16x16x128_fp8_fp8(int dtype, float* d, const uint32_t* a, const uint32_t* b, const float* c, uint32_t idx) {
  smfmac_hook(128, dtype, d, a, b, c, idx, __builtin_return_address(0));
}

}  // extern "C"
