"""The `html` format: self-contained pages (inline CSS and SVG, no network, no script), one module
per document (reports, check, explain, functions); page.py the page, timeline.py the SVG."""
