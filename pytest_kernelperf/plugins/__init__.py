"""The pytest side: the run's session state and the plugin objects registered by plugin.py."""
