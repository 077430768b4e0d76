# -*- coding: latin-1 -*-
"""Café module."""


def latin():
    return "été"
