#!/bin/bash
exec python app.py
