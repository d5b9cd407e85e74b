#!/usr/bin/env python3
"""Writes the hand-made seeds of fuzz/corpus/ (named seed-*), from the repository's
own files and from programs encoded the way the targets read their bytes.

    python3 fuzz/seeds.py        # rewrites every seed-* file, leaves the rest

c_api / c_api_stub read a program with `arbitrary::Unstructured` (src/program.rs):
one opcode byte per call, then the call's fields. The encoders below mirror the
reads they stand for (`ratio` and `choose` and small `int_in_range` take one
byte, wider ranges big-endian bytes, `arbitrary::<uN>` little-endian bytes), so
a seed is a meaningful program: a decode GEMM set up as PyTorch does, then the
calls routing must answer. If the interpreter changes, the seeds stay valid
inputs, only less pointed.
"""
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
MAX_SEED = 4096

# ---------------------------------------------------------------- c_api programs

# Opcodes (first byte of each op in src/program.rs `Driver::op`).
CREATE, DESTROY_HANDLE, CREATE_LAYOUT, CREATE_DESC, CREATE_PREF = 0, 10, 15, 30, 38
DESTROY, SET, GET, HEURISTIC, MATMUL, SETUP, INFO, OWN, OTHER, EXTRA = 43, 55, 100, 125, 140, 185, 200, 210, 220, 240


def nbytes(delta):
    n = 0
    while delta >> (8 * n):
        n += 1
    return n


def rng(lo, hi, v):
    """int_in_range(lo..=hi) giving v."""
    n = nbytes(hi - lo)
    return (v - lo).to_bytes(n, "big") if n else b""


def yes(num, den):
    """ratio(num, den) -> true."""
    return bytes([0])


def no(num, den):
    """ratio(num, den) -> false."""
    return bytes([den - 1])


def live(i=0):
    """pick(): the i-th live object of the kind."""
    return bytes([0]) + struct.pack("<H", i)


def null_obj():
    return bytes([230]) + struct.pack("<H", 0)


def dead(i=0):
    return bytes([190]) + struct.pack("<H", i)


def garbage(v):
    return bytes([250]) + struct.pack("<H", 0) + bytes([2]) + struct.pack("<Q", v)


def aligned_ptr(slot):
    """device_ptr(): 0x7000_0000 + 16 * slot."""
    return bytes([100]) + rng(0, 0xFFFF, slot)


def odd_ptr(off):
    return bytes([210]) + rng(1, 15, off)


def setup(dtype=0, m=4, n=1024, k=4096, bias=False, gemv=False, c_is_d=True, reuse_handle=None):
    """A decode GEMM as F.linear (or the gemv form) sets one up. dtype: 0 bf16, 1 f16."""
    b = bytes([SETUP])
    b += yes(1, 8) if gemv else no(1, 8)
    b += yes(7, 8) + bytes([dtype])
    if not gemv:
        if 1 <= m <= 16:
            b += bytes([0]) + rng(1, 16, m)
        else:
            b += bytes([200]) + rng(1, 300, m)
    b += yes(3, 4) + rng(1, 4096, n // 8) + rng(1, 4096, k // 8)
    if not gemv:
        b += yes(1, 3) if bias else no(1, 3)
    if reuse_handle is not None:
        b += yes(1, 2) if reuse_handle else no(1, 2)
    b += yes(1, 2)  # TRANSB = N set explicitly
    if bias:
        b += aligned_ptr(0x300) + yes(1, 2)
    b += yes(3, 4) if c_is_d else no(3, 4)
    return b


def matmul(ptrs=(aligned_ptr(0), aligned_ptr(0x100), aligned_ptr(0x200), aligned_ptr(0x200)), alpha=0, beta=0, algo=0, workspace=0, group=True):
    b = bytes([MATMUL]) + (yes(3, 4) if group else no(3, 4))
    if group:
        b += no(1, 16) * 6
    else:
        b += live() * 6
    for p in ptrs:
        b += p
    for scalar in (alpha, beta):
        b += bytes([scalar])
        if scalar == 250:  # a device pointer (where the descriptor says so)
            b += aligned_ptr(0x400)
        elif 230 <= scalar <= 239:  # another host value: 1.0
            b += bytes([0])
    b += bytes([algo]) + bytes([workspace])
    if 180 <= workspace <= 219:
        b += aligned_ptr(0x500) + bytes([2])
    b += yes(3, 4)
    return b


def heuristic(requested=1):
    return bytes([HEURISTIC]) + yes(2, 3) + no(1, 8) * 7 + bytes([0]) + rng(0, 8, requested) + no(1, 8) + no(1, 8)


def desc_set(attr_index, value_index, length_index=1, obj=None):
    """SetAttribute on a descriptor: attr from the Desc list, value from VALUES."""
    return bytes([SET, 0]) + (obj or live()) + no(1, 10) + bytes([attr_index]) + bytes([0]) + yes(3, 4) + bytes([value_index, length_index]) + no(1, 8)


def layout_set(attr, value_index, length_index=1, obj=None):
    return bytes([SET, 2]) + (obj or live()) + no(1, 10) + rng(0, 9, attr) + bytes([0]) + yes(3, 4) + bytes([value_index, length_index]) + no(1, 8)


def set_null(kind_index, attr_byte, size_index):
    return bytes([SET, kind_index]) + live() + no(1, 10) + bytes([attr_byte]) + bytes([255, size_index])


def get(kind_index, attr_byte, obj=None):
    return bytes([GET, kind_index]) + (obj or live()) + no(1, 10) + bytes([attr_byte]) + bytes([0, 0]) + no(1, 8) + no(1, 6)


def destroy(kind_index, obj):
    return bytes([DESTROY, kind_index]) + obj


def c_api_seeds():
    # Desc attribute list indices (program.rs `attr`): 0 TRANSA, 1 TRANSB, 2 EPILOGUE,
    # 3 BIAS_POINTER, 13 POINTER_MODE (index 13), 20 COMPUTE_INPUT_TYPE_A_EXT, 22 VERSIONED_102.
    # VALUES indices: 0 -> 0, 1 -> 1, 3 -> OP_N, 4 -> OP_T, 5 -> OP_C, 6 -> bf16, 9 -> BIAS, 14 -> u64::MAX.
    s = {}
    s["setup-matmul-bf16"] = setup() + matmul()
    s["setup-matmul-f16-bias"] = setup(dtype=1, bias=True) + matmul()
    s["setup-matmul-gemv"] = setup(gemv=True, n=4096, k=4096) + matmul()
    s["too-many-tokens"] = setup(m=200) + matmul()
    s["separate-c"] = setup(m=8, c_is_d=False) + matmul()
    s["misaligned"] = setup() + matmul(ptrs=(odd_ptr(3), aligned_ptr(1), aligned_ptr(2), odd_ptr(1)))
    s["null-pointers"] = setup() + matmul(ptrs=(bytes([0]), bytes([0]), bytes([0]), bytes([0])))
    s["null-alpha"] = setup() + matmul(alpha=245)
    s["nonzero-beta"] = setup() + matmul(beta=235)
    s["workspace"] = setup() + matmul(workspace=190)
    s["heuristic"] = setup() + heuristic(1) + matmul(algo=200)
    s["heuristic-many"] = setup(bias=True) + heuristic(8)
    s["transpose-c"] = setup() + desc_set(0, 5) + matmul()
    s["device-pointer-mode"] = setup() + desc_set(13, 1) + matmul(alpha=250, beta=250)
    s["epilogue-bias-no-pointer"] = setup() + desc_set(2, 9) + matmul()
    s["compute-input-type"] = setup() + desc_set(20, 6) + matmul()
    s["versioned-102"] = setup() + desc_set(22, 14, 2) + matmul()
    s["batch"] = setup() + layout_set(0, 2) + matmul()
    s["order-row"] = setup() + layout_set(3, 1) + matmul()
    s["set-null-huge"] = setup() + set_null(0, 0, 5) + set_null(2, 2, 6) + set_null(4, 1, 3)
    s["get-attributes"] = setup() + get(0, 0) + get(0, 13) + get(1, 2) + get(1, 4) + get(2, 1)
    s["double-destroy"] = setup() + destroy(0, live()) + destroy(0, dead()) + matmul()
    s["use-after-destroy"] = setup() + destroy(2, live(2)) + matmul() + heuristic(2)
    s["destroy-handle-then-matmul"] = setup() + bytes([DESTROY_HANDLE]) + live() + matmul()
    s["garbage-handles"] = setup() + destroy(0, garbage(0x1234)) + destroy(1, garbage(0x5110)) + bytes([DESTROY_HANDLE]) + garbage(1) + matmul(group=False)
    s["wrong-kind"] = setup() + destroy(1, bytes([215]) + struct.pack("<H", 0)) + matmul()
    s["null-handle"] = setup() + bytes([DESTROY_HANDLE]) + null_obj() + bytes([INFO]) + null_obj() + no(1, 8) + rng(0, 2, 0) + matmul(group=False)
    s["two-gemms"] = setup(m=1) + setup(m=16, reuse_handle=True) + matmul() + heuristic(3)
    s["info"] = bytes([CREATE]) + no(1, 16) + bytes([INFO]) + live() + no(1, 8) + rng(0, 2, 0) + bytes([INFO]) + live() + no(1, 8) + rng(0, 2, 1) + bytes([INFO]) + live() + no(1, 8) + rng(0, 2, 2)
    own_extra = {0: bytes([0]), 4: rng(0, 40, 15) + b"too-many-tokens", 6: bytes([0])}
    s["own-api"] = b"".join(bytes([OWN]) + rng(0, 7, i) + own_extra.get(i, b"") for i in range(8)) + setup() + matmul()
    s["disabled"] = setup() + bytes([OWN]) + rng(0, 7, 0) + bytes([0]) + matmul()
    s["others"] = bytes([CREATE]) + no(1, 16) + b"".join(bytes([OTHER]) + live() + no(1, 2) + rng(0, 64, 3) + aligned_ptr(1) * 3 + bytes(12) + no(1, 4) + rng(0, 20, i) for i in range(21))
    s["create-null"] = bytes([CREATE]) + yes(1, 16) + bytes([CREATE_LAYOUT]) + yes(1, 16) + bytes([CREATE_DESC]) + yes(1, 16) + bytes([CREATE_PREF]) + yes(1, 16)
    s["extra"] = setup() + bytes([EXTRA, 1]) + live() + bytes([EXTRA, 18, 3]) + matmul()
    return s


# ---------------------------------------------------------------- tuning tables


def small_table(path, entries, mutate=None):
    """The shipped table at `path` with its planner section and `entries` entries."""
    with open(path) as f:
        t = json.load(f)
    t["entries"] = t["entries"][:entries]
    if mutate:
        mutate(t)
    return b"\x00" + json.dumps(t, separators=(",", ":")).encode()


def tuning_seeds():
    s = {}
    tdir = os.path.join(ROOT, "tuning")
    tables = sorted(f for f in os.listdir(tdir) if f.endswith(".json") and f != "fallback.json")
    for name in tables:
        path = os.path.join(tdir, name)
        stem = name[:-5]
        with open(path, "rb") as f:
            raw = f.read()
        s[f"{stem}-truncated"] = b"\x00" + raw[: MAX_SEED - 1]
        for n in (0, 2, 6):
            seed = small_table(path, n)
            if len(seed) <= MAX_SEED:
                s[f"{stem}-{n}-entries"] = seed

    sm90 = os.path.join(tdir, "sm90.json")

    def no_planner(t):
        t.pop("planner", None)

    def wrong_arch(t):
        t["arch"] = "gfx942"

    def unknown_field(t):
        t["extra"] = 1

    def bad_band(t):
        e = t["entries"][0]
        e["m_min"], e["m_max"] = 9, 1

    def unknown_kernel(t):
        t["entries"][0]["kernel"]["tile_n"] = 48

    def split_zero(t):
        t["entries"][0]["split_k"] = 0

    def huge_shape(t):
        e = t["entries"][0]
        e["n"], e["k"], e["m_max"] = 4294967295, 4294967295, 4294967295

    def zero_constants(t):
        p = t["planner"]
        for key in ("unit_intake_gbs", "dram_tbs", "partials_tbs", "wave_us", "margin"):
            p[key] = 0.0
        p["unit_shared_bytes"] = 0
        p["unit_threads"] = 0
        for k in p["kinds"]:
            for key in ("cta_gbs", "unit_tflops"):
                k[key] = 0.0

    def forward_entry(t):
        t["entries"][0].pop("kernel")

    def model_source(t):
        for e in t["entries"]:
            e["source"] = "model"

    for fn in (no_planner, wrong_arch, unknown_field, bad_band, unknown_kernel, split_zero, huge_shape, zero_constants, forward_entry, model_source):
        s[f"sm90-{fn.__name__.replace('_', '-')}"] = small_table(sm90, 3, fn)
    for i, text in enumerate(("", "{}", "[]", "null", '{"schema":1,"arch":"sm90","entries":[]}', '{"schema":1,"arch":"gfx950","entries":[]}',
                 '{"schema":1,"arch":"gfx942","entries":[{"dtype":"bf16","n":1,"k":8,"bias":false,"m_min":1,"m_max":1,"source":"measured"}]}',
                 '{"schema":-1,"arch":"sm90","entries":[{}]}', '{"schema":1e999,"arch":"sm90","entries":[]}', "\ufeff{}",
                 '{"schema":1,"arch":"sm90","entries":[' + "[" * 200 + "]" * 200 + "]}")):
        s[f"edge-{i}"] = b"\x00" + text.encode()
    # Structured mode (odd first byte): the bytes become a table through `arbitrary`.
    for i, body in enumerate((bytes(range(64)), bytes([1]) * 200, bytes([0xFF, 0, 3, 7]) * 40)):
        s[f"structured-{i}"] = b"\x01" + body
    return s


# ---------------------------------------------------------------- environments


def env_seeds():
    # `Vec<(Name, Value)>`: each pair is an enum tag (u32, scaled into the variant
    # count) and its fields. Mostly Known(i) names with Word(j) values.
    def known(i):
        return struct.pack("<I", 0) + bytes([i])

    def word(j):
        return struct.pack("<I", 0x80000000) + bytes([j])

    s = {}
    for i in range(16):
        s[f"name-{i}"] = b"".join(known(i) + word(j) for j in (i, i + 3, i + 7))
    s["everything"] = b"".join(known(i) + word(i % 24) for i in range(16))
    s["text"] = b"SKINNYLT_LOG=trace:/tmp/skinnylt-%i.log SKINNYLT_MAX_M=16 SKINNYLT_PDL=0"
    return s


def write(target, seeds):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.startswith("seed-"):
            os.remove(os.path.join(d, f))
    for name, data in seeds.items():
        assert len(data) <= MAX_SEED, (target, name, len(data))
        with open(os.path.join(d, f"seed-{name}"), "wb") as f:
            f.write(data)
    print(f"{target}: {len(seeds)} seeds")


if __name__ == "__main__":
    api = c_api_seeds()
    write("c_api", api)
    write("c_api_stub", api)
    write("tuning_parse", tuning_seeds())
    write("env_parse", env_seeds())
