from .inner import render
