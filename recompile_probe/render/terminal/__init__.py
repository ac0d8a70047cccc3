"""Every document laid out for a terminal with rich (tables, colour where it is one)."""
