"""Check that dropping finished rows from a decode batch changes no generated text.

Runs one `clerk` command in this process and records every text `greedy_generate` returns, in
call order, into a JSON file; `--keep-rows` runs it with the drop switched off (finished rows stay
in the batch to the end, as before). Two files from the same command must be identical:

    python benchmarks/decode_drop_check.py --texts drop.json -- evaluate --config CFG --timelines T ...
    python benchmarks/decode_drop_check.py --texts keep.json --keep-rows -- evaluate --config CFG ...
    python benchmarks/decode_drop_check.py --compare drop.json keep.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path


def record(texts_out: Path, argv: list[str], keep_rows: bool) -> None:
    from clerk.cli import main
    from clerk.models import decoding

    calls: list[list[str]] = []
    original = decoding.greedy_generate

    def recorded(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append(list(out))
        return out

    decoding.greedy_generate = recorded
    for mod in list(sys.modules.values()):  # modules that imported the function by name
        if getattr(mod, "__name__", "").startswith("clerk.") and getattr(mod, "greedy_generate", None) is original:
            mod.greedy_generate = recorded
    if keep_rows:
        decoding._drop_rows = lambda cache, keep: False
    with contextlib.suppress(SystemExit):
        main(argv)
    texts_out.write_text(json.dumps(calls, ensure_ascii=False) + "\n")
    print(f"{len(calls)} generate calls, {sum(map(len, calls))} texts -> {texts_out}", file=sys.stderr)


def compare(a: Path, b: Path) -> int:
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    texts = sum(map(len, left))
    same = left == right
    differing = sum(x != y for la, lb in zip(left, right) for x, y in zip(la, lb))
    print(f"{len(left)} / {len(right)} calls, {texts} texts: {'identical' if same else f'{differing} differ'}")
    return 0 if same else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=Path, help="where to write the recorded texts")
    parser.add_argument("--keep-rows", action="store_true", help="decode with finished rows kept (the old path)")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("A", "B"))
    parser.add_argument("clerk_argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.compare:
        raise SystemExit(compare(*args.compare))
    argv = args.clerk_argv[1:] if args.clerk_argv[:1] == ["--"] else args.clerk_argv
    record(args.texts, argv, args.keep_rows)


if __name__ == "__main__":
    main()
