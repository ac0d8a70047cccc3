"""Renderers: one module or folder per format (terminal/, markdown.py, html/, json.py,
junit.py) over the text they share (cells.py, lines/). They read only result records, so a saved
JSON report re-renders without torch or a re-run. formats.py picks a run report's renderer
by name.
"""
