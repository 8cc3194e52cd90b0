#!/usr/bin/env python3
"""P7: parse + strict-validate + byte-exact re-serialise a 32GiB-shaped C1, with peak RSS from /usr/bin/time.

Writes a synthetic C1 (StackedDrg32GiBV1_1 by default, Go key order as Curio sends it) to a temporary file,
then measures ``psagent bench c1-parse --file`` in a fresh process under ``/usr/bin/time -v`` so that the
peak RSS is that of parsing alone (generation happens in this process). Prints the report, the RSS and a
Markdown row for BENCHMARKS.md; ``--json`` writes everything.

    .venv/bin/python benchmarks/c1_parse.py [--size 32GiB] [--order go|rust] [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from porep.c1.synth import synth_c1_json
from porep.prooftypes import proof_type


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--size", default="32GiB", help="sector size (StackedDrg<size>V1_1) or a full type name")
    ap.add_argument("--order", default="go", choices=["go", "rust"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rng-seed", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    name = args.size if args.size.startswith("StackedDrg") else f"StackedDrg{args.size}V1_1"
    pt = proof_type(name)
    time_bin = shutil.which("time") or "/usr/bin/time"
    psagent = Path(sys.executable).with_name("psagent")
    cli = [str(psagent)] if psagent.exists() else [sys.executable, "-c", "from agent.cli import main; main()"]
    with tempfile.TemporaryDirectory() as tmp:
        c1_file = Path(tmp) / "c1.json"
        c1_file.write_bytes(synth_c1_json(pt, seed=args.rng_seed, order=args.order))
        out_json = Path(tmp) / "result.json"
        cmd = [time_bin, "-v", *cli, "bench", "c1-parse", "--file", str(c1_file)]
        cmd += ["--repeat", str(args.repeat), "--json", str(out_json)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        print(proc.stdout, end="")
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        result = json.loads(out_json.read_text())
    rss_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))  # type: ignore[union-attr]
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", proc.stderr)
    result["time_v_max_rss_kib"] = rss_kib
    result["time_v_wall"] = wall.group(1) if wall else None
    m, w, rss = result["machine"], result["warm_median"], rss_kib / 1024
    print(f"/usr/bin/time -v: peak RSS {rss:,.0f} MiB, wall {result['time_v_wall']} (whole process)")
    phases = f"decode {w['decode']:.2f}, models {w['models']:.2f}, serialise {w['serialise']:.2f}"
    print(
        f"| {result['date']} | {result['proof']} ({result['order']} order) | {result['bytes'] / 1e6:.1f} MB "
        f"| {w['total']:.2f} s ({phases}) | {result['cold']['total']:.2f} s | {rss:,.0f} MiB "
        f"| {m['cores']} × {m['cpu']} |"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
