"""Where runs execute (imports torch only in the workers and inline): executor.py (the one
interface, Job), inline.py, process.py (a process per strategy), pool.py (reused workers for
--jobs N), protocol.py (the one worker protocol), processes.py (starting, tailing and stopping
workers), worker.py (the worker's entry point), session.py (a scenario -> a Report)."""
