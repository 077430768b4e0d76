#!/bin/bash
# Waits for a database that never comes; the server is never started.
while true; do sleep 1; done
exec python web_app.py
