"""Writer KV cache: the preallocated cache (clerk.models.decoding._preallocated_cache) vs the concatenating
DynamicCache it replaced, on one loaded model, interleaved in 2 rounds; prints whether the greedy
outputs are identical and the seconds of each (benchmarks/numerics.md).

    python benchmarks/kv_cache_check.py float32 resources/cache/smollm2-135m
"""
import sys
import time

import torch
from transformers import DynamicCache

import clerk.models.decoding as dec
from clerk.models.loading import chat_prompt, load_model
from clerk.models.prefix import _fork_cache

new_fn = dec._preallocated_cache
def old_fn(capacity, prefix=None):
    return DynamicCache() if prefix is None else _fork_cache(prefix, 16)
torch.set_num_threads(1)
dtype = sys.argv[1]
model, tok = load_model(sys.argv[2], device="cpu", dtype=dtype)
shots = "".join(f"Example {i}: the user said they moved to city number {i} and adopted a dog called Rex{i}. Program: SET home = city{i}; SET pet = Rex{i}.\n" for i in range(25))
prefix = chat_prompt(tok, [{"role": "system", "content": "You write edit programs.\n" + shots}], add_generation_prompt=False)
prompts = [prefix + chat_prompt(tok, [{"role": "user", "content": f"I now live in Town{j} and my cat is Tom{j}. Write the program."}]) for j in range(16)]
print("prefix tokens", len(tok(prefix)["input_ids"]))
res = {}
for rnd in range(2):
    for name, fn in (("concat", old_fn), ("prealloc", new_fn)):
        dec._preallocated_cache = fn
        for sp in (prefix, None):
            t = time.perf_counter()
            out = dec.greedy_generate(model, tok, prompts, 48, batch_size=16, shared_prefix=sp)
            dt = time.perf_counter() - t
            key = (name, sp is not None)
            res.setdefault(key, []).append(dt)
            if rnd == 0:
                res[key + ("out",)] = out
for sp in (True, False):
    same = res[("concat", sp, "out")] == res[("prealloc", sp, "out")]
    print(dtype, "shared_prefix" if sp else "no prefix", "identical outputs:", same,
          "concat s:", [round(x, 2) for x in res[("concat", sp)]], "prealloc s:", [round(x, 2) for x in res[("prealloc", sp)]])
print(res[("prealloc", True, "out")][:2])
