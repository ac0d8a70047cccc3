"""python -m recompile_probe.schema [FOLDER]: regenerate the shipped schemas (make schemas)."""

import sys
from pathlib import Path

from .catalog import write_all

for written in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else None):
    print(written)
