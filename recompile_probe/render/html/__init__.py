"""Self-contained HTML pages (inline CSS and SVG, no network, no script): page.py (the page),
timeline.py (SVG), report.py (run and check), functions.py (watch, summarize), explain.py."""
