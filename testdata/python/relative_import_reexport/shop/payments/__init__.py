from .gateway import charge
