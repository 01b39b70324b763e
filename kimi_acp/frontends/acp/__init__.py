"""The ACP front end (`kimi acp`): see `entry.py` for start-up and `server.py` for the methods."""
