"""Run every benchmark in bench/ and regenerate its table and its JSON under bench/results/.

    python bench/run_all.py [--full] [--only compile_time,memory] [--timeout 900]

Every `bench/*.py` except this file (and files starting with `_`) is a benchmark, so one
added later runs without touching this script. Each runs as a subprocess of the same
Python, in name order, with `--json bench/results/<name>.json` and with `--quick` when its
source defines that option (unless `--full`); its output goes to the terminal as it comes
and to `bench/results/<name>.txt`. A summary of exit codes and wall times follows, and
`bench/results/run_all.json` keeps it. The conventions a benchmark follows to fit in: it
accepts `--json PATH`, prints its tables on stdout, asserts no times, and offers `--quick`
if its full run is long. The run with `--quick` is meant to take well under 20 minutes on
2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"


def benchmarks() -> list[Path]:
    """The benchmark scripts of bench/, in name order."""
    me = Path(__file__).resolve()
    return sorted(p for p in BENCH.glob("*.py") if p.resolve() != me and not p.name.startswith("_"))


def supports(script: Path, option: str) -> bool:
    """Does the script's argument parser define `option`? (Asks its --help.)"""
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True)
    return option in done.stdout


def command(script: Path, quick: bool) -> list[str]:
    cmd = [sys.executable, str(script)]
    if supports(script, "--json"):
        cmd += ["--json", str(RESULTS / f"{script.stem}.json")]
    if quick and supports(script, "--quick"):
        cmd.append("--quick")
    return cmd


def run(script: Path, quick: bool, timeout: float) -> dict:
    """Run one benchmark, echo and save its output; its exit code and wall time."""
    cmd = command(script, quick)
    print(f"\n===== {script.name}: {' '.join(Path(c).name if c == sys.executable else c for c in cmd[1:])}",
          flush=True)
    log = RESULTS / f"{script.stem}.txt"
    start = time.perf_counter()
    status = "ok"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=BENCH.parent,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})

        def echo() -> None:
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                out.write(line)

        reader = threading.Thread(target=echo, daemon=True)
        reader.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            status = "timeout"
        except KeyboardInterrupt:
            proc.kill()
            raise
        reader.join()
    seconds = time.perf_counter() - start
    if status == "ok" and proc.returncode:
        status = f"exit {proc.returncode}"
    return {"bench": script.name, "status": status, "seconds": round(seconds, 1), "quick": "--quick" in cmd}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="do not pass --quick (longer runs, more repeats)")
    parser.add_argument("--only", default="", help="comma-separated benchmark names (without .py)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds before a benchmark is stopped")
    args = parser.parse_args()
    scripts = benchmarks()
    if args.only:
        wanted = set(args.only.split(","))
        scripts = [s for s in scripts if s.stem in wanted]
    RESULTS.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    start = time.perf_counter()
    rows = [run(s, not args.full, args.timeout) for s in scripts]
    total = time.perf_counter() - start
    print("\n| benchmark | status | quick | wall s |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['bench']} | {r['status']} | {'yes' if r['quick'] else 'no'} | {r['seconds']:.1f} |")
    print(f"| **total** | {sum(r['status'] == 'ok' for r in rows)}/{len(rows)} ok | | {total:.1f} |")
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"\n{os.cpu_count()} cpus; load average before {load_before}, after {load_after} (1, 5, 15 min)")
    (RESULTS / "run_all.json").write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d %H:%M"), "total_seconds": round(total, 1), "cpus": os.cpu_count(),
        "load_average_before": load_before, "load_average_after": load_after,
        "python": platform.python_version(), "benchmarks": rows,
    }, indent=1) + "\n")
    sys.exit(0 if all(r["status"] == "ok" for r in rows) else 1)


if __name__ == "__main__":
    main()
