"""mylib: a src-layout package."""
try:
    from ._speedups import fast_sum as total
except ImportError:
    from ._pure import slow_sum as total
