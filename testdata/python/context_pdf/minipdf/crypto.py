"""Encryption helpers."""


def decrypt_stream(path, password):
    """Decrypt a stream with RC4 or AES."""
    return _rc4(password) or _aes(password)


def _rc4(key):
    return None


def _aes(key):
    return None
