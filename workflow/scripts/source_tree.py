"""Rule scripts import crseval from this source tree: `import source_tree` before any crseval import.

Snakemake puts the folder of a rule script on sys.path when it runs the script, so this module is
found wherever a job runs: the project's venv, a conda environment of envs/ (where Snakemake clears
PYTHONPATH, so a PYTHONPATH set by the workflow would not reach the script), or a cluster node. The
tree's src/ goes first on sys.path, ahead of any installed crseval, so that the jobs of a checkout
(or of a scratch copy of it) run that checkout's library, the one the Snakefile planned with.
"""

import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")
if sys.path[:1] != [SRC]:
    sys.path.insert(0, SRC)
