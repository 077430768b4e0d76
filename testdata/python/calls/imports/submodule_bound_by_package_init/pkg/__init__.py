from . import sub
