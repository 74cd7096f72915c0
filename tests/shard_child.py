"""Run one shard in a child process (the kill -9 resume test kills it mid-shard).

Usage: python shard_child.py <json arguments for crseval.simulate.shard.build_shard_runner + progress/output/indices>
"""

import json
import sys

from crseval.simulate.shard import build_shard_runner

arguments = json.loads(sys.argv[1])
start, stop = arguments.pop("indices")
progress, output = arguments.pop("progress"), arguments.pop("output")
runner = build_shard_runner(**arguments)
counts = runner.run(range(start, stop), progress=progress, output=output)
print(json.dumps({**counts, "calls": runner.calls, "cache_hits": runner.cache_hits}))
