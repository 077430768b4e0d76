#!/bin/bash
# Starts the server as a daemon in a session of its own and returns at once.
setsid python web_app.py "$$" &
echo "server started in the background"
