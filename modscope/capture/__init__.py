"""Capture: everything that touches a framework (being assembled)."""
