"""Log filtering."""

from logfilter.filter import by_keyword, by_level, read_log, save_lines

__all__ = ["by_keyword", "by_level", "read_log", "save_lines"]
