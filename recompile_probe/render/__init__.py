"""Renderers: one module or folder per format (terminal/, markdown.py, html/, json.py,
junit.py), picked by formats.py's table, over the text they share (cells.py, lines/). They read
only result records, so a saved JSON report re-renders without torch or a re-run.
"""
