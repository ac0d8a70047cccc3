"""Compile events as they happen: events.py (the one place a metrics record and its reason
become a CompileEvent), recorder.py (the Recorder every client shares), record.py (record()),
watch_child.py (the recorder inside a watched program), trace.py (the same events from a
TORCH_TRACE log; no torch)."""
