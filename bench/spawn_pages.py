"""Which objects a spawned child's first model call copies: its copied pages, attributed to objects.

The fast fork harness: warm up once in this process (``robotd.warmup.warm()``), then fork
children one after another; each builds a ``Robot`` against a script server (a separate
process, so this one stays threadless) and makes one ``run``, reading its own USS before and
after. With ``--attribute``, the first child then lists the pages it holds that the fork server
holds too but at another physical page (``/proc/PID/pagemap``: copied on write), walks every
object (``gc.unfreeze()`` first: frozen objects are not listed) and histograms those pages by
the kinds of object on them: inherited ones, ones the child made itself (not frozen), and pages
with no object known (free pymalloc blocks, malloc'd buffers, GC headers).

    python bench/spawn_pages.py [--children 5] [--attribute] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from page_owners import attribute  # noqa: E402
from pagemap import copied_pages  # noqa: E402

MB = 1024 * 1024


def start_stub(turns: int, folder: Path) -> tuple[subprocess.Popen[str], str]:
    """The script server in its own process; returns it and its URL."""
    script = folder / "script.json"
    script.write_text(json.dumps([{"content": "hi"}] * turns))
    proc = subprocess.Popen([sys.executable, "-m", "robotlab.testing.llm_server", "--script",
                             str(script)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if not line or line[0] != "LISTENING":
        proc.kill()
        raise RuntimeError(f"script server did not start: {line}")
    return proc, line[1]


def uss() -> float:
    import psutil

    return psutil.Process().memory_full_info().uss / MB


def child(api: str, model: str, report: Path, hot: Path | None) -> None:
    """In a forked child: build a robot, run it once, report USS (and the attribution); never
    returns."""
    code = 0
    try:
        from robotlab.robot.robot import Robot

        start = uss()
        robot = Robot(name="kid", system_prompt="You help.", model=model, api_base=api, api_key="k")
        built = uss()
        robot.run("hello")
        ran = uss()
        result: dict[str, Any] = {"built": built - start, "run": ran - built, "total": ran - start,
                                  "uss": ran}
        if hot:
            pages = copied_pages(os.getppid())
            result["attribution"] = attribute(pages, json.loads(hot.read_text()))
        report.write_text(json.dumps(result))
    except BaseException as exc:  # a child must never return into the harness
        report.write_text(json.dumps({"error": repr(exc)}))
        code = 1
    os._exit(code)


def fork_children(api: str, model: str, count: int, folder: Path,
                  attributed: bool) -> Iterator[dict[str, Any]]:
    hot = folder / "hot.json"
    if attributed:
        run_in_child(partial(probe, api, model, hot))
    for i in range(count):
        report = folder / f"child{i}.json"
        run_in_child(partial(child, api, model, report, hot if attributed and i == 0 else None))
        yield json.loads(report.read_text())


def run_in_child(body: Callable[[], None]) -> None:
    pid = os.fork()
    if pid == 0:
        body()
        os._exit(0)
    os.waitpid(pid, 0)


def probe(api: str, model: str, out: Path) -> None:
    """In a forked child: the addresses of what one robot's construction and first run touch."""
    from hot_objects import profile

    from robotlab.robot.robot import Robot

    def construct_and_run() -> None:
        Robot(name="kid", system_prompt="You help.", model=model, api_base=api,
              api_key="k").run("hello")

    out.write_text(json.dumps(profile(construct_and_run)))


def summary(results: list[dict[str, Any]]) -> str:
    errors = [r["error"] for r in results if "error" in r]
    if errors:
        return f"children failed: {errors}"
    cols = ("built", "run", "total", "uss")
    rows = [" ".join(f"{r[c]:6.2f}" for c in cols) for r in results]
    medians = " ".join(f"{statistics.median(r[c] for r in results):6.2f}" for c in cols)
    return "\n".join(["MB grown:  built    run  total  (USS)",
                      *(f"  child   {row}" for row in rows), f"  median  {medians}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--children", type=int, default=5)
    parser.add_argument("--model", default="openai/scripted")
    parser.add_argument("--attribute", action="store_true",
                        help="histogram the first child's copied pages")
    parser.add_argument("--json", type=Path, help="write the first child's attribution here")
    parser.add_argument("--rounds", type=int,
                        help="the warm-up's rounds of model calls after the code is moved "
                        "(default: robotd.warmup.AFTER_RELOCATION_ROUNDS)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stub, api = start_stub(args.children + 2, Path(tmp))
        try:
            # here, not in each child: its import would count as the child's
            import psutil  # noqa: F401

            from robotd import warmup

            if args.rounds is not None:
                warmup.AFTER_RELOCATION_ROUNDS = args.rounds
            started = time.perf_counter()
            warmup.warm()
            print(f"warm-up: {time.perf_counter() - started:.1f} s")
            results = list(fork_children(api, args.model, args.children, Path(tmp), args.attribute))
        finally:
            stub.terminate()
            stub.wait(10)
    print(summary(results))
    if args.attribute and "attribution" in results[0]:
        from page_owners import render

        print(render(results[0]["attribution"]))
        if args.json:
            args.json.write_text(json.dumps(results[0]["attribution"], indent=1))


if __name__ == "__main__":
    main()
