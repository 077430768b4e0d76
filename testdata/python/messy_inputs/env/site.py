def venv(): pass
