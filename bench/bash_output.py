"""run_bash with huge output: peak memory (RSS) and throughput, against `cat` to /dev/null.

Each size runs in a fresh interpreter so its peak RSS is its own. The old design wrote the output
to a temp file and read it whole (1 GB of output cost ~1.9 GB RSS); the bounded reader keeps about
twice OUTPUT_CAP. Run: python bench/bash_output.py [MiB ...]   (default: 16 256)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import _common  # puts the repository root on sys.path

CHILD = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
from hermes_tui.agent.tools import ToolRegistry
from hermes_tui.memory.store import MemoryStore
from hermes_tui.skills.manager import SkillManager
tmp = Path(tempfile.mkdtemp())
reg = ToolRegistry(tmp, MemoryStore(tmp / "m.db"), SkillManager(tmp / "s"))
reg.execute("run_bash", {"command": "true"})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
result = reg.execute("run_bash", {"command": f"head -c {int(sys.argv[1]) << 20} /dev/zero", "timeout": 600})
seconds = time.perf_counter() - started
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "rss_growth_kb": after - before, "peak_kb": after, "chars": len(result.output)}))
"""


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [16, 256]
    for mib in sizes:
        started = time.perf_counter()
        subprocess.run(["bash", "-c", f"head -c {mib << 20} /dev/zero | cat > /dev/null"], check=True)
        baseline = time.perf_counter() - started
        out = subprocess.run([sys.executable, "-c", CHILD, str(mib)], capture_output=True, text=True, check=True,
                             cwd=_common.ROOT)
        figures = json.loads(out.stdout)
        print(f"{mib:6d} MiB output: run_bash {figures['seconds']:7.2f} s (cat baseline {baseline:6.2f} s, "
              f"ratio {figures['seconds'] / baseline:5.1f}x)  peak RSS {figures['peak_kb']:7d} KiB "
              f"(growth during the call {figures['rss_growth_kb']} KiB)  "
              f"returned {figures['chars']} chars")


if __name__ == "__main__":
    main()
