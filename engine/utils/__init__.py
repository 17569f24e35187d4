"""Utilities shared by the engine: hook handles and (later) data loading."""
