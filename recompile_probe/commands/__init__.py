"""What a command adds on top of the pipeline: check.py, shard.py (and merge), explain.py,
suggest/, watch.py, summarize.py. Front ends (cli/, the pytest plugin) call these."""
