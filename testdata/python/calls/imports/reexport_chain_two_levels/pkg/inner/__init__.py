from .impl import render
