#!/usr/bin/env python3
"""GGUF dequantization fixture: raw random blocks of each ggml type and gguf-py's dequantization.

Run with any Python that has gguf==0.19.0 and numpy (e.g. the reference venv):

    ~/.cache/attnzoo/ref-venv/bin/python scripts/gen_gguf_quants.py [OUT_FILE]

OUT_FILE defaults to tests/fixtures/gguf/quants.gguf. The file is written with `gguf.GGUFWriter`
(GGUF v3, little endian, default alignment 32) and holds, for each TYPE in F16, BF16, Q8_0, Q4_0,
Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K:

- `TYPE`: a tensor of that ggml type, 2 rows x 512 elements (GGUF dims ne = [512, 2]: ne[0] is
  the innermost, contiguous dimension), made of random bytes, except that every f16 scale / min
  field is a finite f16 drawn as normal * 0.05 (so nothing decodes to NaN/Inf) and a few blocks
  carry edge values (see `edges`): a zero `d`, negative `d` / `dmin`, all-ones and all-zeros quant
  bytes, all-ones 6-bit scale bytes (K types), i8 extremes -128 / 127 (Q8_0, Q6_K scales), and for
  F16 / BF16 zeros, -0, subnormals, the largest finite values;
- `TYPE.dequantized`: F32, same 2 x 512 shape, exactly `gguf.quants.dequantize(raw, TYPE)`.

The file's metadata also records `attnzoo.gguf_version` (the gguf-py version) and `attnzoo.seed`.

Block layouts (elements per block, bytes per block; byte offsets inside one block; all
multi-byte fields little endian; "f16" is IEEE half, "d" the scale, "m"/"dmin" the min):

  type  elems bytes  layout
  F16      1    2    f16
  BF16     1    2    bf16 (upper half of an f32)
  Q8_0    32   34    d:f16 @0 | qs: 32 x i8 @2                                 x = d * q
  Q4_0    32   18    d:f16 @0 | qs: 16 B @2 (elem j<16: low nibble of qs[j],
                     elem j+16: high nibble)                                   x = d * (q - 8)
  Q4_1    32   20    d:f16 @0 | m:f16 @2 | qs: 16 B @4 (nibbles as Q4_0)       x = d * q + m
  Q5_0    32   22    d:f16 @0 | qh: u32 @2 (bit j = 5th bit of elem j) | qs: 16 B @6
                                                                               x = d * (q - 16)
  Q5_1    32   24    d:f16 @0 | m:f16 @2 | qh: u32 @4 | qs: 16 B @8            x = d * q + m
  Q2_K   256   84    scales: 16 B @0 (low nibble: scale, high nibble: min, one per 16 elems)
                     | qs: 64 B @16 (2-bit) | d:f16 @80 | dmin:f16 @82
                                                          x = d * (sc & 15) * q - dmin * (sc >> 4)
  Q3_K   256  110    hmask: 32 B @0 | qs: 64 B @32 (2-bit) | scales: 12 B @96 (16 x 6-bit,
                     minus 32) | d:f16 @108     x = d * (s - 32) * (q2 - (hbit ? 0 : 4))
  Q4_K   256  144    d:f16 @0 | dmin:f16 @2 | scales: 12 B @4 (8 x 6-bit scale + 8 x 6-bit min)
                     | qs: 128 B @16                          x = d * sc * q - dmin * m
  Q5_K   256  176    d:f16 @0 | dmin:f16 @2 | scales: 12 B @4 | qh: 32 B @16 | qs: 128 B @48
                                                              x = d * sc * q - dmin * m
  Q6_K   256  210    ql: 128 B @0 | qh: 64 B @128 | scales: 16 x i8 @192 | d:f16 @208
                                                              x = d * s * (q - 32)

(The bit-level packing of the quants and the 6-bit K scales is gguf-py's `quants.py` / ggml's
`ggml-quants.c` `dequantize_row_*`; the F32 tensors are the ground truth a reader must match
bit for bit, up to float rounding of the final multiply-add.)
"""

import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

SEED = 20240611
ROWS, COLS = 2, 512
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "gguf", "quants.gguf")

TYPES = ["F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]

# Byte offsets, inside a block, of the f16 fields: (scale d, min or None), and the byte ranges of
# the quant bits and of the packed sub-block scales (None where the type has none).
LAYOUT = {
    #        d    min    quants          scales
    "Q8_0": (0, None, (2, 34), None),
    "Q4_0": (0, None, (2, 18), None),
    "Q4_1": (0, 2, (4, 20), None),
    "Q5_0": (0, None, (2, 22), None),
    "Q5_1": (0, 2, (4, 24), None),
    "Q2_K": (80, 82, (16, 80), (0, 16)),
    "Q3_K": (108, None, (0, 96), (96, 108)),
    "Q4_K": (0, 2, (16, 144), (4, 16)),
    "Q5_K": (0, 2, (16, 176), (4, 16)),
    "Q6_K": (208, None, (0, 192), (192, 208)),
}


def f16_bytes(values):
    return np.asarray(values, dtype=np.float16).view(np.uint8).reshape(-1, 2)


def float_tensor(name, rng):
    """F16 / BF16: finite random values plus edge values, as raw little-endian bytes."""
    x = (rng.standard_normal(ROWS * COLS) * 2.0).astype(np.float32)
    if name == "F16":
        edges = np.array([0.0, -0.0, 6.1035156e-05, -6.1035156e-05, 5.9604645e-08, -5.9604645e-08,
                          3.0e-06, 65504.0, -65504.0, 1.0, -1.0, 0.5], dtype=np.float32)
        x[:len(edges)] = edges
        return x.astype(np.float16).view(np.uint8)
    # BF16: the top 16 bits of an f32 (truncated, so exact values are the table's).
    edges = np.array([0.0, -0.0, 1.1754944e-38, -1.1754944e-38, 9.2e-41, -9.2e-41,
                      3.3895314e38, -3.3895314e38, 1.0, -1.0, 0.5], dtype=np.float32)
    x[:len(edges)] = edges
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)
    return bits.view(np.uint8)


def quant_tensor(name, rng):
    block, size = GGML_QUANT_SIZES[T[name]]
    nblocks = ROWS * COLS // block
    raw = rng.integers(0, 256, size=(nblocks, size), dtype=np.uint8)
    d_off, m_off, (q0, q1), scales = LAYOUT[name]
    raw[:, d_off:d_off + 2] = f16_bytes(rng.standard_normal(nblocks) * 0.05)
    if m_off is not None:
        raw[:, m_off:m_off + 2] = f16_bytes(rng.standard_normal(nblocks) * 0.05)

    # Edge blocks (nblocks >= 4 for every type: 32 for 32-element blocks, 4 for K types).
    # 0: zero scale d (the min, where there is one, stays random).
    raw[0, d_off:d_off + 2] = f16_bytes([0.0])
    # 1: negative d (and negative min), every quant bit set, every scale bit set.
    raw[1, d_off:d_off + 2] = f16_bytes([-abs(rng.standard_normal()) * 0.05 - 0.01])
    if m_off is not None:
        raw[1, m_off:m_off + 2] = f16_bytes([-abs(rng.standard_normal()) * 0.05 - 0.01])
    raw[1, q0:q1] = 0xFF
    if scales is not None:
        raw[1, scales[0]:scales[1]] = 0xFF
    # 2: every quant bit clear, positive d; scale bytes clear too for K types.
    raw[2, d_off:d_off + 2] = f16_bytes([abs(rng.standard_normal()) * 0.05 + 0.01])
    raw[2, q0:q1] = 0x00
    if scales is not None:
        raw[2, scales[0]:scales[1]] = 0x00
    # Signed-byte extremes: Q8_0's i8 quants, Q6_K's i8 scales (block 3: -128, 127 alternating).
    if name == "Q8_0":
        raw[3, 2:34] = np.tile(np.array([0x80, 0x7F], dtype=np.uint8), 16)
    if name == "Q6_K":
        raw[3, 192:208] = np.tile(np.array([0x80, 0x7F], dtype=np.uint8), 8)
    # Last block: a large (but finite) scale, to check f16 decoding beyond [0, 1).
    raw[-1, d_off:d_off + 2] = f16_bytes([-3.5])
    return raw.reshape(-1)


def main():
    rng = np.random.default_rng(SEED)
    os.makedirs(os.path.dirname(os.path.abspath(OUT)), exist_ok=True)
    writer = gguf.GGUFWriter(OUT, arch="attnzoo-quant-test")
    writer.add_string("attnzoo.gguf_version", "0.19.0")
    writer.add_uint32("attnzoo.seed", SEED)
    expected = {}
    for name in TYPES:
        qtype = T[name]
        raw = float_tensor(name, rng) if name in ("F16", "BF16") else quant_tensor(name, rng)
        block, size = GGML_QUANT_SIZES[qtype]
        raw = raw.reshape(ROWS, COLS // block * size)
        deq = gguf.quants.dequantize(raw, qtype).astype(np.float32)
        assert deq.shape == (ROWS, COLS), (name, deq.shape)
        assert np.isfinite(deq).all(), name
        writer.add_tensor(name, raw, raw_dtype=qtype)
        writer.add_tensor(name + ".dequantized", np.ascontiguousarray(deq))
        expected[name] = (raw.copy(), deq)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    # Read back and check.
    reader = gguf.GGUFReader(OUT)
    tensors = {t.name: t for t in reader.tensors}
    assert len(tensors) == 2 * len(TYPES), sorted(tensors)
    for name in TYPES:
        raw, deq = expected[name]
        t = tensors[name]
        d = tensors[name + ".dequantized"]
        assert t.tensor_type == T[name], (name, t.tensor_type)
        assert d.tensor_type == T.F32
        assert list(t.shape) == [COLS, ROWS] and list(d.shape) == [COLS, ROWS], (t.shape, d.shape)
        assert np.array_equal(np.asarray(t.data).view(np.uint8).reshape(-1), raw.reshape(-1)), name
        again = gguf.quants.dequantize(np.asarray(t.data).view(np.uint8).reshape(raw.shape), T[name])
        stored = np.asarray(d.data, dtype=np.float32).reshape(ROWS, COLS)
        assert np.array_equal(again, deq) and np.array_equal(stored, deq), name
        print(f"{name:5} {t.n_bytes:6} B  ne={list(t.shape)}  offset={t.data_offset}  "
              f"|x|max={np.abs(deq).max():.4g}  zeros={(deq == 0).sum()}")
    print(f"{OUT}: {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
