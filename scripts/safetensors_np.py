"""safetensors read with the standard library and NumPy, for the reference scripts: an 8-byte
little-endian header length, the JSON header, then the raw little-endian data. F32, F16 and BF16
(the top half of a float32) are widened to float64.

    from safetensors_np import read_safetensors
    tensors = read_safetensors("model.safetensors")   # {name: (float64 array, "BF16")}
"""
import json
import struct

import numpy as np


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = body[begin:end]
        if info["dtype"] == "F32":
            values = np.frombuffer(raw, "<f4")
        elif info["dtype"] == "F16":
            values = np.frombuffer(raw, "<f2")
        elif info["dtype"] == "BF16":
            values = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise SystemExit(f"{path}: unexpected dtype {info['dtype']} of {name}")
        out[name] = (values.astype(np.float64).reshape(info["shape"]), info["dtype"])
    return out
