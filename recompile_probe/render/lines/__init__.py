"""The plain-text lines each document prints, shared by the terminal, Markdown and HTML."""
