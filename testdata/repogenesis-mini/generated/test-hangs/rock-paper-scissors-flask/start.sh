#!/bin/bash
exec python web_app.py
