def _fetch_impl(url):
    return url


fetch = _fetch_impl
