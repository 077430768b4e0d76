# requests may be missing; fetch() is never called here (it would use the network).
try:
    from requests import get
except ImportError:
    get = None


def fetch(url):
    return get(url, timeout=5)
