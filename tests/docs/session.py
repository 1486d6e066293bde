"""Run one page's blocks in order, as a reader would: ``python session.py BLOCKS.json``.

Python blocks share one namespace (a later block may use an earlier one's names); each shell
block runs in bash with ``set -e``, starting from the variables the previous shell block
exported. Line numbers in tracebacks and in bash's failure line are the page's own. Exits 1 at
the first failing block, after printing ``doc block failed: PAGE:LINE``. The caller runs this in
a process group of its own and ends the group afterwards, so processes a block leaves running
(``robotlab broker &``) go with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from pathlib import Path

# `robotlab broker` with no --bind listens where every other command looks ($ROBOT_LAB_BROKER),
# so a page that starts its own broker never takes the machine's default port.
SHELL_PRELUDE = """set -e
robotlab() {
  if [ "$1" = broker ] && [[ " $* " != *" --bind "* ]]; then
    shift; command robotlab broker --bind "$ROBOT_LAB_BROKER" "$@"
  else command robotlab "$@"; fi
}
trap 'export -p > "$DOC_STATE"' EXIT
trap 'echo "bash: line $LINENO exited $?" >&2' ERR
[ -f "$DOC_STATE" ] && . "$DOC_STATE"
"""


def run_python(block: dict, namespace: dict) -> bool:
    padded = "\n" * (block["line"] - 1) + block["source"]
    try:
        exec(compile(padded, block["page"], "exec"), namespace)  # noqa: S102 - running the docs is the point
    except BaseException:  # a SystemExit or KeyboardInterrupt in a block is a failure too
        traceback.print_exc()
        return False
    return True


def run_shell(block: dict, scripts: Path) -> bool:
    script = scripts / f"{Path(block['page']).name}-{block['line']}.sh"
    script.write_text("\n" * (block["line"] - 1) + block["source"] + "\n")
    runner = SHELL_PRELUDE + f". {script}\n"
    return subprocess.run(["bash", "-c", runner]).returncode == 0


def main(blocks_file: str) -> int:
    blocks = json.loads(Path(blocks_file).read_text())
    scripts = Path(blocks_file).parent
    namespace: dict = {"__name__": "__main__"}
    for block in blocks:
        print(f"--- {block['page']}:{block['line']} ({block['language']})", flush=True)
        python = block["language"] == "python"
        ok = run_python(block, namespace) if python else run_shell(block, scripts)
        sys.stdout.flush()
        sys.stderr.flush()
        if not ok:
            print(f"doc block failed: {block['page']}:{block['line']}", flush=True)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
